/* cdc_fastcast.c -- a memo of the C++ runtime's __dynamic_cast for Icarus's vvp (LD_PRELOAD).
 *
 * Why: Icarus 11's vvp does a dynamic_cast on every variable read and write of a thread
 * (%load/vec4, %store/vec4: the net's functor to vvp_signal_value) and on many VPI calls. The
 * C++ runtime answers each by walking the class hierarchy and comparing type names with strcmp:
 * ~480 instructions a call, over a third of a handshake seed's instructions (callgrind, session 8).
 *
 * What: this library, preloaded into vvp (cdc_env/sim/icarus.py puts "env LD_PRELOAD=<it>" in
 * front of vvp), defines __dynamic_cast and remembers each answer the real one (the next
 * definition, libstdc++'s) gave, as an offset from the source pointer or a failure, keyed by
 * everything the answer depends on: the source object's vtable pointer (which fixes the complete
 * object's dynamic type and where the source subobject sits in it: the offset to the top is in
 * that vtable), the complete object's own vtable pointer, the static source and target types and
 * the compiler's src2dst hint. Every call with the same key gets the same answer from the real
 * runtime -- the object layout of a dynamic type is fixed -- so the memo changes no result, only
 * the cost (a hit is a few dozen instructions). A key never seen is passed to the real runtime.
 *
 * Nothing a design does reaches it: a design is Verilog, compiled to vvp code that calls
 * vvp's C++; which casts vvp makes is vvp's own. The memo is per thread (initial-exec TLS), so
 * it needs no lock; a forked seed starts with the zygote's memo, already warm.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

typedef void* (*dyncast_fn)(const void*, const void*, const void*, ptrdiff_t);

#define SLOTS 1024 /* a power of two */

struct slot {
    const void* vptr;       /* the source subobject's vtable pointer (0: empty slot) */
    const void* whole_vptr; /* the complete object's vtable pointer */
    const void* src_type;
    const void* dst_type;
    ptrdiff_t src2dst;
    ptrdiff_t delta; /* result - source, when found */
    int found;
};

static __thread struct slot memo[SLOTS] __attribute__((tls_model("initial-exec")));
static dyncast_fn real_dyncast;

/* A key not in the memo (or a null source): ask the runtime, remember its answer. */
static __attribute__((noinline)) void* ask(const void* src, const void* src_type, const void* dst_type,
                                           ptrdiff_t src2dst, struct slot* s, const void* vptr,
                                           const void* whole_vptr) {
    if (real_dyncast == NULL) {
        real_dyncast = (dyncast_fn)dlsym(RTLD_NEXT, "__dynamic_cast");
        if (real_dyncast == NULL) return NULL; /* no C++ runtime below: cannot happen in vvp */
    }
    void* r = real_dyncast(src, src_type, dst_type, src2dst);
    if (s != NULL) {
        s->vptr = vptr;
        s->whole_vptr = whole_vptr;
        s->src_type = src_type;
        s->dst_type = dst_type;
        s->src2dst = src2dst;
        s->found = (r != NULL);
        s->delta = r ? (char*)r - (char*)src : 0;
    }
    return r;
}

void* __dynamic_cast(const void* src, const void* src_type, const void* dst_type, ptrdiff_t src2dst) {
    if (src == NULL) return ask(src, src_type, dst_type, src2dst, NULL, NULL, NULL);
    const void* vptr = *(const void* const*)src;
    /* Itanium C++ ABI: the vtable's offset-to-top is two words before its address point */
    ptrdiff_t to_top = ((const ptrdiff_t*)vptr)[-2];
    const void* whole_vptr = *(const void* const*)((const char*)src + to_top);
    uintptr_t h = ((uintptr_t)vptr >> 3) ^ ((uintptr_t)dst_type >> 3) ^ ((uintptr_t)dst_type >> 9);
    struct slot* s = &memo[h & (SLOTS - 1)];
    if (s->vptr == vptr && s->dst_type == dst_type && s->whole_vptr == whole_vptr &&
        s->src_type == src_type && s->src2dst == src2dst)
        return s->found ? (void*)((char*)src + s->delta) : NULL;
    return ask(src, src_type, dst_type, src2dst, s, vptr, whole_vptr);
}
