// Explicit instantiations compiled once into the cached Verilator runtime (libverilated.a).
//
// g++ writes a precompiled header before it instantiates the templates its inline functions
// use, so every model compiled with the runtime's header (cdc_env/sim/verilator.py, PCH_TEXT)
// would instantiate them again. The runtime's header declares each line below `extern`, which
// stops that for templates that are not inline (for inline and constexpr ones an extern
// declaration changes nothing in g++, so they are not listed); this file, compiled with the
// runtime, holds the one definition every model links against. Only fixed types: the libstdc++
// special math functions for float and long double (std::beta, std::cyl_bessel_j, ...), the
// string-to-number helper behind std::stoi and friends, the std::deque under VlQueue of the four
// integer widths, and the std::set of VlProcess* of verilated_timing.h. One declaration a line,
// each starting with "template "; the rest of this file is not copied into the header.
#include "cdc_vl_runtime.h"

template float std::__detail::__assoc_laguerre<float>(unsigned int, unsigned int, float);
template long double std::__detail::__assoc_laguerre<long double>(unsigned int, unsigned int, long double);
template float std::__detail::__assoc_legendre_p<float>(unsigned int, unsigned int, float, float);
template long double std::__detail::__assoc_legendre_p<long double>(unsigned int, unsigned int, long double, long double);
template float std::__detail::__beta<float>(float, float);
template long double std::__detail::__beta<long double>(long double, long double);
template float std::__detail::__comp_ellint_1<float>(float);
template long double std::__detail::__comp_ellint_1<long double>(long double);
template float std::__detail::__comp_ellint_2<float>(float);
template long double std::__detail::__comp_ellint_2<long double>(long double);
template float std::__detail::__comp_ellint_3<float>(float, float);
template long double std::__detail::__comp_ellint_3<long double>(long double, long double);
template float std::__detail::__cyl_bessel_i<float>(float, float);
template long double std::__detail::__cyl_bessel_i<long double>(long double, long double);
template float std::__detail::__cyl_bessel_j<float>(float, float);
template long double std::__detail::__cyl_bessel_j<long double>(long double, long double);
template float std::__detail::__cyl_bessel_k<float>(float, float);
template long double std::__detail::__cyl_bessel_k<long double>(long double, long double);
template float std::__detail::__cyl_neumann_n<float>(float, float);
template long double std::__detail::__cyl_neumann_n<long double>(long double, long double);
template float std::__detail::__ellint_1<float>(float, float);
template long double std::__detail::__ellint_1<long double>(long double, long double);
template float std::__detail::__ellint_2<float>(float, float);
template long double std::__detail::__ellint_2<long double>(long double, long double);
template float std::__detail::__ellint_3<float>(float, float, float);
template long double std::__detail::__ellint_3<long double>(long double, long double, long double);
template float std::__detail::__expint<float>(float);
template long double std::__detail::__expint<long double>(long double);
template float std::__detail::__poly_hermite<float>(unsigned int, float);
template long double std::__detail::__poly_hermite<long double>(unsigned int, long double);
template float std::__detail::__laguerre<float>(unsigned int, float);
template long double std::__detail::__laguerre<long double>(unsigned int, long double);
template float std::__detail::__poly_legendre_p<float>(unsigned int, float);
template long double std::__detail::__poly_legendre_p<long double>(unsigned int, long double);
template float std::__detail::__riemann_zeta<float>(float);
template long double std::__detail::__riemann_zeta<long double>(long double);
template float std::__detail::__sph_bessel<float>(unsigned int, float);
template long double std::__detail::__sph_bessel<long double>(unsigned int, long double);
template float std::__detail::__sph_legendre<float>(unsigned int, unsigned int, float);
template long double std::__detail::__sph_legendre<long double>(unsigned int, unsigned int, long double);
template float std::__detail::__sph_neumann<float>(unsigned int, float);
template long double std::__detail::__sph_neumann<long double>(unsigned int, long double);
template int __gnu_cxx::__stoa<long int, int, char, int>(long int (*)(const char*, char**, int), const char*, const char*, std::size_t*, int);
template long int __gnu_cxx::__stoa<long int, long int, char, int>(long int (*)(const char*, char**, int), const char*, const char*, std::size_t*, int);
template long unsigned int __gnu_cxx::__stoa<long unsigned int, long unsigned int, char, int>(long unsigned int (*)(const char*, char**, int), const char*, const char*, std::size_t*, int);
template long long int __gnu_cxx::__stoa<long long int, long long int, char, int>(long long int (*)(const char*, char**, int), const char*, const char*, std::size_t*, int);
template long long unsigned int __gnu_cxx::__stoa<long long unsigned int, long long unsigned int, char, int>(long long unsigned int (*)(const char*, char**, int), const char*, const char*, std::size_t*, int);
template float __gnu_cxx::__stoa<float, float, char>(float (*)(const char*, char**), const char*, const char*, std::size_t*);
template double __gnu_cxx::__stoa<double, double, char>(double (*)(const char*, char**), const char*, const char*, std::size_t*);
template long double __gnu_cxx::__stoa<long double, long double, char>(long double (*)(const char*, char**), const char*, const char*, std::size_t*);
template int __gnu_cxx::__stoa<long int, int, wchar_t, int>(long int (*)(const wchar_t*, wchar_t**, int), const char*, const wchar_t*, std::size_t*, int);
template long int __gnu_cxx::__stoa<long int, long int, wchar_t, int>(long int (*)(const wchar_t*, wchar_t**, int), const char*, const wchar_t*, std::size_t*, int);
template long unsigned int __gnu_cxx::__stoa<long unsigned int, long unsigned int, wchar_t, int>(long unsigned int (*)(const wchar_t*, wchar_t**, int), const char*, const wchar_t*, std::size_t*, int);
template long long int __gnu_cxx::__stoa<long long int, long long int, wchar_t, int>(long long int (*)(const wchar_t*, wchar_t**, int), const char*, const wchar_t*, std::size_t*, int);
template long long unsigned int __gnu_cxx::__stoa<long long unsigned int, long long unsigned int, wchar_t, int>(long long unsigned int (*)(const wchar_t*, wchar_t**, int), const char*, const wchar_t*, std::size_t*, int);
template float __gnu_cxx::__stoa<float, float, wchar_t>(float (*)(const wchar_t*, wchar_t**), const char*, const wchar_t*, std::size_t*);
template double __gnu_cxx::__stoa<double, double, wchar_t>(double (*)(const wchar_t*, wchar_t**), const char*, const wchar_t*, std::size_t*);
template long double __gnu_cxx::__stoa<long double, long double, wchar_t>(long double (*)(const wchar_t*, wchar_t**), const char*, const wchar_t*, std::size_t*);
template float std::__detail::__poly_laguerre<unsigned int, float>(unsigned int, unsigned int, float);
template long double std::__detail::__poly_laguerre<unsigned int, long double>(unsigned int, unsigned int, long double);
template bool std::__detail::__isnan<float>(float);
template bool std::__detail::__isnan<long double>(long double);
template float std::__detail::__beta_lgamma<float>(float, float);
template long double std::__detail::__beta_lgamma<long double>(long double, long double);
template float std::__detail::__ellint_rf<float>(float, float, float);
template long double std::__detail::__ellint_rf<long double>(long double, long double, long double);
template float std::__detail::__ellint_rd<float>(float, float, float);
template long double std::__detail::__ellint_rd<long double>(long double, long double, long double);
template float std::__detail::__ellint_rj<float>(float, float, float, float);
template long double std::__detail::__ellint_rj<long double>(long double, long double, long double, long double);
template float std::__detail::__cyl_bessel_ij_series<float>(float, float, float, unsigned int);
template void std::__detail::__bessel_ik<float>(float, float, float&, float&, float&, float&);
template long double std::__detail::__cyl_bessel_ij_series<long double>(long double, long double, long double, unsigned int);
template void std::__detail::__bessel_ik<long double>(long double, long double, long double&, long double&, long double&, long double&);
template void std::__detail::__cyl_bessel_jn_asymp<float>(float, float, float&, float&);
template void std::__detail::__bessel_jn<float>(float, float, float&, float&, float&, float&);
template void std::__detail::__cyl_bessel_jn_asymp<long double>(long double, long double, long double&, long double&);
template void std::__detail::__bessel_jn<long double>(long double, long double, long double&, long double&, long double&, long double&);
template float std::__detail::__expint_Ei<float>(float);
template long double std::__detail::__expint_Ei<long double>(long double);
template float std::__detail::__poly_hermite_recursion<float>(unsigned int, float);
template long double std::__detail::__poly_hermite_recursion<long double>(unsigned int, long double);
template float std::__detail::__riemann_zeta_product<float>(float);
template float std::__detail::__riemann_zeta_glob<float>(float);
template float std::__detail::__riemann_zeta_sum<float>(float);
template long double std::__detail::__riemann_zeta_product<long double>(long double);
template long double std::__detail::__riemann_zeta_glob<long double>(long double);
template long double std::__detail::__riemann_zeta_sum<long double>(long double);
template void std::__detail::__sph_bessel_jn<float>(unsigned int, float, float&, float&, float&, float&);
template void std::__detail::__sph_bessel_jn<long double>(unsigned int, long double, long double&, long double&, long double&, long double&);
template float std::__detail::__poly_laguerre_large_n<unsigned int, float>(unsigned int, unsigned int, float);
template float std::__detail::__poly_laguerre_recursion<unsigned int, float>(unsigned int, unsigned int, float);
template float std::__detail::__poly_laguerre_hyperg<unsigned int, float>(unsigned int, unsigned int, float);
template long double std::__detail::__poly_laguerre_large_n<unsigned int, long double>(unsigned int, unsigned int, long double);
template long double std::__detail::__poly_laguerre_recursion<unsigned int, long double>(unsigned int, unsigned int, long double);
template long double std::__detail::__poly_laguerre_hyperg<unsigned int, long double>(unsigned int, unsigned int, long double);
template float std::__detail::__ellint_rc<float>(float, float);
template long double std::__detail::__ellint_rc<long double>(long double, long double);
template void std::__detail::__gamma_temme<float>(float, float&, float&, float&, float&);
template void std::__detail::__gamma_temme<long double>(long double, long double&, long double&, long double&, long double&);
template float std::__detail::__expint_E1<float>(float);
template float std::__detail::__expint_Ei_series<float>(float);
template float std::__detail::__expint_Ei_asymp<float>(float);
template long double std::__detail::__expint_E1<long double>(long double);
template long double std::__detail::__expint_Ei_series<long double>(long double);
template long double std::__detail::__expint_Ei_asymp<long double>(long double);
template float std::__detail::__expint_E1_series<float>(float);
template float std::__detail::__expint_En_cont_frac<float>(unsigned int, float);
template float std::__detail::__expint_E1_asymp<float>(float);
template long double std::__detail::__expint_E1_series<long double>(long double);
template long double std::__detail::__expint_En_cont_frac<long double>(unsigned int, long double);
template long double std::__detail::__expint_E1_asymp<long double>(long double);
template class std::deque<unsigned char>;
template class std::deque<unsigned short>;
template class std::deque<unsigned int>;
template class std::deque<unsigned long>;
template class std::_Rb_tree<VlProcess*, VlProcess*, std::_Identity<VlProcess*>, std::less<VlProcess*>, std::allocator<VlProcess*>>;
