# ruff: noqa: E501 -- one small Verilog design per line of the table
"""Issue 36, classes 3 and 4: the synthesizable SystemVerilog constructs RTL writers use, one
small design each (a helper module instantiated in the handshake reference, its output unused so
only the front end's lowering is judged), and what the gate makes of each: accepted, or refused
with a finding that names the construct and the rewrite (docs/gate.md, "Language support").

Lowered by the gate before synthesis: ``repeat (N)`` and ``do ... while`` (synth.loops_as_for),
the enum methods on a variable of a ``typedef enum`` the text declares (synth.enum_methods).
Accepted since issue 36 because they cannot change the netlist or the verdict: SV ``let``, a
local ``interface``, immediate assertions that only report, an initializer equal to the flop's
reset value (checked in the top module, where the flop is kept).
"""

from __future__ import annotations

import pytest

from cdc_env.gate import run_gate
from cdc_env.task import load_task

T = load_task("handshake")
REF = T.reference_text

CONSTRUCTS = {
 "do_while": "always_comb begin int i; y = 0; i = 0; do begin y = y + x[i]; i++; end while (i < 4); end",
 "repeat": "always_comb begin y = x; repeat (3) y = {y[6:0], y[7]}; end",
 "enum_first_next": "typedef enum logic [1:0] {S0, S1, S2} st_t; st_t s; always_ff @(posedge clk or negedge rst_n) if (!rst_n) s <= S0; else s <= (s == s.last()) ? s.first() : s.next(); assign y = {6'd0, s};",
 "enum_prev_num": "typedef enum logic [1:0] {S0, S1, S2} st_t; st_t s; always_ff @(posedge clk or negedge rst_n) if (!rst_n) s <= S2; else s <= s.prev(); assign y = {6'd0, s} + 8'(s.num());",
 "while": "always_comb begin int i; y = 0; i = 0; while (i < 4) begin y = y + x[i]; i = i + 1; end end",
 "foreach": "logic [3:0] a; always_comb begin y = 0; a = x[3:0]; foreach (a[i]) y = y + a[i]; end",
 "for_break_continue": "always_comb begin y = 0; for (int i = 0; i < 8; i++) begin if (x[i]) continue; if (i == 6) break; y = y + 1; end end",
 "case_inside": "always_comb case (x) inside [8'd0:8'd9]: y = 1; 8'b1???_????: y = 2; default: y = 3; endcase",
 "wildcard_eq": "assign y = (x ==? 8'b1???_0000) ? 8'd1 : 8'd0;",
 "inside_op": "assign y = (x inside {8'd1, 8'd3, [8'd10:8'd20]}) ? 8'd1 : 8'd0;",
 "packed_union": "typedef union packed { logic [7:0] b; logic [1:0][3:0] n; } u_t; u_t u; assign u.b = x; assign y = {u.n[0], u.n[1]};",
 "packed_struct": "typedef struct packed { logic [3:0] hi; logic [3:0] lo; } s_t; s_t s; assign s = x; assign y = {s.lo, s.hi};",
 "streaming": "assign y = {<<{x}};",
 "streaming_slice": "assign y = {<<4{x}};",
 "unique_case": "always_comb unique case (x[1:0]) 2'd0: y = 1; 2'd1: y = 2; 2'd2: y = 3; default: y = 0; endcase",
 "priority_case": "always_comb priority case (1'b1) x[0]: y = 1; x[1]: y = 2; default: y = 0; endcase",
 "unique0_case": "always_comb begin y = 0; unique0 case (x[1:0]) 2'd0: y = 1; 2'd1: y = 2; endcase end",
 "casez": "always_comb casez (x) 8'b1???????: y = 1; default: y = 0; endcase",
 "incr_ops": "logic [7:0] c; always_ff @(posedge clk or negedge rst_n) if (!rst_n) c <= '0; else begin c <= c + 8'd1; end always_comb begin y = c; y += x; y -= 8'd1; y ^= 8'h5a; y <<= 1; end",
 "fill_literals": "assign y = x[0] ? '1 : '0;",
 "int_bit_byte": "byte b; bit [7:0] t; int k; always_comb begin k = 32'(x) * 3; b = byte'(k); t = b; y = t; end",
 "signed_shift": "logic signed [7:0] s; assign s = x; assign y = s >>> 2;",
 "casts": "assign y = 8'(x + 9'd1) ^ 8'($signed(x[3:0]));",
 "function_return": "function automatic logic [7:0] f(input logic [7:0] a); if (a == 0) return 8'd1; return a << 1; endfunction assign y = f(x);",
 "void_function": "logic [7:0] t; function automatic void g(input logic [7:0] a, output logic [7:0] b); b = ~a; endfunction always_comb g(x, t); assign y = t;",
 "task_output": "task automatic tk(input logic [7:0] a, output logic [7:0] b); b = a + 1; endtask always_comb tk(x, y);",
 "generate_if_case": "localparam int M = 2; generate if (M == 2) begin : g assign y = x; end else begin : h assign y = ~x; end endgenerate",
 "generate_case": "localparam int M = 1; generate case (M) 0: begin : a assign y = x; end 1: begin : b assign y = x + 1; end endcase endgenerate",
 "for_generate_inline_genvar": "for (genvar i = 0; i < 8; i++) begin : g assign y[i] = x[7-i]; end",
 "multidim_packed": "logic [1:0][3:0] m; assign m = x; assign y = {m[0], m[1]};",
 "unpacked_array_lit": "logic [7:0] lut [0:3]; assign lut = '{8'd1, 8'd2, 8'd4, 8'd8}; assign y = lut[x[1:0]];",
 "array_reduction_sysfn": "assign y = {4'd0, 4'($countones(x))} + {7'd0, $onehot(x)} + {7'd0, $onehot0(x)};",
 "localparam_type": "localparam type T = logic [7:0]; T t; assign t = x; assign y = t;",
 "package_import": None,
 "let": "let inc(a) = a + 8'd1; assign y = inc(x);",
 "immediate_assert": "always_comb begin y = x; assert (y == x) else $error(\"mismatch\"); end",
 "local_interface": None,
 "init_equal_reset": "logic [7:0] q = 8'd0; always_ff @(posedge clk or negedge rst_n) if (!rst_n) q <= 8'd0; else q <= x; assign y = q;",
 "always_ff_iff": "logic [7:0] q; always_ff @(posedge clk iff x[0] or negedge rst_n) if (!rst_n) q <= 0; else q <= x; assign y = q;",
 "conditional_op_chain": "assign y = x[0] ? 8'd1 : x[1] ? 8'd2 : 8'd3;",
 "replication_concat": "assign y = {{4{x[0]}}, x[3:0]};",
 "part_select_indexed": "assign y = {x[0 +: 4], x[7 -: 4]};",
 "struct_assignment_pattern": "typedef struct packed { logic [3:0] a; logic [3:0] b; } s_t; s_t s; assign s = '{a: x[3:0], b: x[7:4]}; assign y = s;",
 "enum_cast_and_loop": "typedef enum logic [1:0] {A, B, C, D} e_t; always_comb begin y = 0; for (int i = 0; i < 4; i++) if (e_t'(i) == e_t'(x[1:0])) y = 8'(i); end",
 "case_default_x": "always_comb case (x[0]) 1'b0: y = 1; default: y = 'x; endcase",
 "automatic_var_in_block": "always_comb begin automatic logic [7:0] t = x + 1; y = t; end",
 "return_in_loop": "function automatic logic [7:0] first1(input logic [7:0] a); for (int i = 0; i < 8; i++) if (a[i]) return 8'(i); return 8'hff; endfunction assign y = first1(x);",
 "nested_function_recursion": "function automatic logic [7:0] par(input logic [7:0] a, input int n); if (n == 0) return 8'(a[0]); return par(a, n - 1) ^ 8'(a[n]); endfunction assign y = par(x, 7);",
 "dowhile_in_function": "function automatic logic [7:0] cnt(input logic [7:0] a); int i; logic [7:0] r; r = 0; i = 0; do begin r += 8'(a[i]); i++; end while (i < 8); return r; endfunction assign y = cnt(x);",
 "repeat_in_ff": "logic [7:0] q; always_ff @(posedge clk or negedge rst_n) if (!rst_n) q <= 0; else begin logic [7:0] t; t = q; repeat (2) t = t + x; q <= t; end assign y = q;",
 "forever_break": None,
 "struct_typedef_in_package": None,
 "unique_if": "always_comb begin y = 0; unique if (x[0]) y = 1; else if (x[1]) y = 2; end",
 "priority_if": "always_comb begin y = 0; priority if (x[0]) y = 1; else if (x[1]) y = 2; end",
 "bit_select_var": "always_comb begin y = '0; y[x[2:0]] = 1'b1; end",
 "wire_initializer_comma": "wire [7:0] a = x, b = ~x; assign y = a & b;",
 "var_decl_comma_init": "logic [7:0] k0 = 8'd3, k1 = 8'd5; assign y = x + k0 + k1;",
 "alias": "wire [7:0] w1, w2; alias w1 = w2; assign w1 = x; assign y = w2;",
 # Enum methods on a function argument and on a port (red2 W2): the usual next-state helper.
 "enum_methods_function_argument": "typedef enum logic [1:0] {S0, S1, S2} st_t; function automatic st_t nxt(input st_t s); return (s == s.last()) ? s.first() : s.next(); endfunction function automatic st_t prv(input st_t s); return s.prev(); endfunction st_t q; always_ff @(posedge clk or negedge rst_n) if (!rst_n) q <= S0; else q <= x[0] ? nxt(q) : prv(q); assign y = {6'd0, q};",
 "enum_methods_port": None,
}
PKG = "package pk; typedef struct packed { logic [3:0] a; logic [3:0] b; } s_t; function automatic logic [7:0] sw(input s_t s); return {s.b, s.a}; endfunction endpackage\n"
IFC = "interface bus_if; logic [7:0] d; logic v; endinterface\n"
def design(name: str, body: str | None) -> str:
    pre = ""
    if name == "package_import":
        pre, body = PKG, "import pk::*; s_t s; assign s = x; assign y = sw(s);"
    elif name == "struct_typedef_in_package":
        pre, body = PKG, "pk::s_t s; assign s = x; assign y = pk::sw(s);"
    elif name == "local_interface":
        pre, body = IFC, "bus_if b(); assign b.d = x; assign b.v = 1'b1; assign y = b.v ? b.d : 8'd0;"
    elif name == "enum_methods_port":
        pre = "package st_pkg; typedef enum logic [1:0] {S0, S1, S2} st_t; endpackage\n"
        body = "st_t q; always_ff @(posedge clk or negedge rst_n) if (!rst_n) q <= S0; else q <= s_i.next(); assign y = {6'd0, q} + 8'(s_i.num());"
        return (f"{pre}{REF}module construct_probe import st_pkg::*; (input logic clk, input logic rst_n, input st_t s_i, "
                f"output logic [7:0] y);\n  {body}\nendmodule\n").replace(
            "\nendmodule\nmodule construct_probe", "\n  logic [7:0] probe_y;\n  construct_probe u_probe (.clk(clk_a_i), "
            ".rst_n(rst_a_ni), .s_i(st_pkg::st_t'({1'b0, start_i})), .y(probe_y));\nendmodule\nmodule construct_probe", 1)
    elif name == "forever_break":
        body = "always_comb begin int i; y = 0; i = 0; forever begin if (i == 4) break; y = y + x[i]; i++; end end"
    probe = (f"{pre}module construct_probe (input logic clk, input logic rst_n, input logic [7:0] x, output logic [7:0] y);\n"
             f"  {body}\nendmodule\n")
    inst = "  logic [7:0] probe_y;\n  construct_probe u_probe (.clk(clk_a_i), .rst_n(rst_a_ni), .x({7'd0, start_i}), .y(probe_y));\nendmodule"
    return REF.replace("\nendmodule", "\n" + inst) + probe


CONSTRUCTS.update({
    # Enum methods the gate cannot write from the text alone: left to the front end, whose
    # refusal names the method and the rewrite (not "system task 'next'").
    "enum_method_with_argument": "typedef enum logic [1:0] {S0, S1, S2} st_t; st_t s; always_ff @(posedge clk or negedge rst_n) if (!rst_n) s <= S0; else s <= s.next(2); assign y = {6'd0, s};",
    "enum_method_anonymous_type": "enum logic [1:0] {S0, S1, S2} s; always_ff @(posedge clk or negedge rst_n) if (!rst_n) s <= S0; else s <= s.next(); assign y = {6'd0, s};",
})
REFUSED = {
    # construct: (rule, words the finding must contain)
    "enum_method_with_argument": ("GATE-SYNTH", ("enum method .next()", "write the next state explicitly")),
    "enum_method_anonymous_type": ("GATE-SYNTH", ("enum method .next()",)),
    "forever_break": ("POL-CONSTRUCT", ("forever",)),
    "alias": ("POL-CONSTRUCT", ("alias",)),
}
MORE = {
    # Assertions that do something besides reporting stay refused (issue 36, class 4).
    "assert_side_effect": ("logic f; always_ff @(posedge clk) assert (x != 0) else f <= 1'b1; "
                           "assign y = {7'd0, f};", "POL-CONSTRUCT"),
    "assert_fatal": ("always_comb begin y = x; assert (y == x) else $fatal(1, \"m\"); end", "POL-CONSTRUCT"),
    "assert_time_argument": ("always_comb begin y = x; assert (y == x) else $error(\"%t\", $time); end",
                             "POL-SYSCALL"),
    "assert_increment_argument": ("logic [7:0] c; always_comb begin c = x; y = x; assert (y == x) else "
                                  "$error(\"%d\", c++); end", "POL-CONSTRUCT"),
    "assert_function_condition": ("logic [7:0] g; function automatic logic chk(input logic [7:0] a); g = a; "
                                  "return 1'b1; endfunction always_comb begin y = x; assert (chk(x)); end",
                                  "POL-CONSTRUCT"),
    # Deferred assertions are dropped by synthesis as the immediate ones are (red2 W3).
    "assert_deferred": ("always_comb begin y = x; assert #0 (y == x) else $error(\"m\"); end", None),
    "assert_final": ("always_comb begin y = x; assert final (y == x) else $warning(\"m\"); end", None),
    "assert_deferred_member": ("assign y = x; a_y: assert final (y == x); a_z: assert #0 (y == x) else "
                               "$info(\"i\");", None),
    "assert_deferred_writes": ("logic f; always_comb begin y = x; f = 1'b0; assert #0 (y == x) else f = 1'b1; "
                               "end", "POL-CONSTRUCT"),
    # An initial block that holds only assertions that report is dropped with them (red2 W4).
    "initial_assert": ("assign y = x; initial assert (8 >= 2) else $error(\"width\");", None),
    "initial_block_of_asserts": ("assign y = x; initial begin : chk assert (1) else $error(\"a\"); "
                                 "assert final (1); end", None),
    "initial_empty": ("assign y = x; initial begin end", "POL-INITIAL"),
    "initial_assert_and_assign": ("logic z; assign y = x; initial begin assert (1) else $error(\"a\"); "
                                  "z = 1'b0; end", "POL-INITIAL"),
    # Elaboration tasks (IEEE 1800-2017 20.11) in a generate branch: run by the elaborator only.
    "elab_error_not_taken": ("localparam int W = 8; assign y = x; if (W < 2) begin : g_chk $error(\"W %0d\", W); "
                             "end", None),
    "elab_warning_not_taken": ("localparam int W = 8; assign y = x; if (W < 2) begin : g_chk $warning(\"W\"); "
                               "$info(\"i\"); end", None),
    "elab_fatal_not_taken": ("localparam int W = 8; assign y = x; if (W > 8) begin : g_chk $fatal(1, \"W\"); "
                             "end", None),
    # A let is expanded where it is used: one that names a user function is that call (red2 H1),
    # and one that is pure may be called in a condition.
    "assert_let_hides_call": ("logic [7:0] g; function automatic logic chk(input logic [7:0] a); g = a; "
                              "return 1'b1; endfunction let ok = chk(x); let ok2 = ok && 1'b1; always_comb begin "
                              "y = x; assert (ok2) else $error(\"m\"); end", "POL-CONSTRUCT"),
    "assert_pure_let_call": ("let same(a, b) = a == b; always_comb begin y = x; assert (same(y, x)) else "
                             "$error(\"m\"); end", None),
    "assert_property": ("always_comb y = x; assert property (@(posedge clk) y == x);", "POL-CONSTRUCT"),
    "assume_reports": ("always_comb begin y = x; assume (y == x) $info(\"ok\"); else $warning(\"w %d\", x); "
                       "end", None),
}


@pytest.mark.parametrize("name", sorted(CONSTRUCTS))
def test_each_construct_is_accepted_or_named_with_its_rewrite(name):
    res = run_gate(T, {T.editable: design(name, CONSTRUCTS[name])})
    assert res.status in ("pass", "refused"), res.detail
    if name not in REFUSED:
        assert res.status == "pass", res.findings
        return
    rule, words = REFUSED[name]
    mine = [f for f in res.findings if f["rule"] == rule]
    assert res.status == "refused" and mine, res.findings
    assert all(w in mine[0]["message"] for w in words), mine[0]["message"]
    assert "system task" not in mine[0]["message"]


@pytest.mark.parametrize("name", sorted(MORE))
def test_assertions_are_accepted_only_when_they_only_report(name):
    body, rule = MORE[name]
    res = run_gate(T, {T.editable: design(name, body)})
    if rule is None:
        assert res.status == "pass", res.findings
    else:
        assert res.status == "refused" and rule in {f["rule"] for f in res.findings}, res.findings


def test_elaboration_error_in_an_elaborated_branch_is_the_compile_error():
    body = "localparam int W = 8; assign y = x; if (W > 4) begin : g_chk $error(\"W is %0d\", W); end"
    res = run_gate(T, {T.editable: design("elab", body)})
    assert res.status == "refused" and [f["rule"] for f in res.findings] == ["GATE-PARSE"], res.findings
    assert "W is 8" in res.findings[0]["message"]


@pytest.mark.parametrize("body,words", [
    # one finding, naming what is wrong; no second POL-SYSCALL on the action block's $error (red2 F1)
    ("logic f; always_ff @(posedge clk) assert (x != 0) else begin $error(\"e\"); f <= 1'b1; end "
     "assign y = {7'd0, f};", ("its action block does", "f <= 1 'b 1")),
    ("always_comb begin y = x; assert (y == x) else $fatal(1, \"m\"); end", ("calls $fatal",)),
    ("logic [7:0] c; always_comb begin c = x; y = x; assert (y == x) else $error(\"%d\", c++); end",
     ("its $error has an argument",)),
    # a concurrent assertion: where it may go instead (red2 F3)
    ("always_comb y = x; assert property (@(posedge clk) y == x) else $error(\"p\");",
     ("assert property", "`ifndef SYNTHESIS", "immediate assert")),
])
def test_a_refused_assertion_gets_one_finding_that_says_why(body, words):
    res = run_gate(T, {T.editable: design("refused_assertion", body)})
    assert [f["rule"] for f in res.findings] == ["POL-CONSTRUCT"], res.findings
    assert all(w in res.findings[0]["message"] for w in words), res.findings[0]["message"]


def test_an_initial_block_that_reports_nothing_is_not_told_about_resets():
    res = run_gate(T, {T.editable: design("initial_display", "assign y = x; initial $display(\"hi\");")})
    initial = [f for f in res.findings if f["rule"] == "POL-INITIAL"]
    assert initial and "reset" not in initial[0]["message"] and "generate if" in initial[0]["message"]


@pytest.mark.parametrize("extra", [
    "  always_comb begin a_rdy: assert #0 (ready_o == !busy_q) else $error(\"m\"); end",
    "  a_fin: assert final (ready_o == !busy_q);",
    "  initial assert (1) else $error(\"s\");",
    "  if (1 < 0) begin : g_chk $error(\"never\"); end",
])
def test_a_dropped_check_leaves_the_netlist_as_it_was(extra):
    text = REF.replace("  assign ready_o = !busy_q;", "  assign ready_o = !busy_q;\n" + extra)
    res = run_gate(T, {T.editable: text})
    assert res.status == "pass", res.findings
    assert res.netlist["sha256"] == run_gate(T, {T.editable: REF}).netlist["sha256"]


def test_an_accepted_assertion_leaves_nothing_in_the_netlist():
    text = REF.replace("  assign ready_o = !busy_q;", "  assign ready_o = !busy_q;\n"
                       "  always @(posedge clk_a_i) assert (!(done_o && busy_q)) else $error(\"busy\");")
    res = run_gate(T, {T.editable: text})
    assert res.status == "pass", res.findings
    assert res.netlist["sha256"] == run_gate(T, {T.editable: REF}).netlist["sha256"]


@pytest.mark.parametrize("init,ok", [("1'b0", True), ("1'b1", False)])
def test_an_initializer_is_accepted_only_when_it_is_the_reset_value(init, ok):
    text = REF.replace("  reg  busy_q;", f"  reg  busy_q = {init};")
    res = run_gate(T, {T.editable: text})
    if ok:
        assert res.status == "pass", res.findings
        assert res.netlist["sha256"] == run_gate(T, {T.editable: REF}).netlist["sha256"]
    else:
        assert {f["rule"] for f in res.findings} == {"POL-INITIAL"}, res.findings


def test_an_initializer_on_a_flop_without_a_reset_is_refused():
    text = REF.replace("  reg  req_q;      // toggles once per request",
                       "  reg  req_q = 1'b0;\n  reg  seen_a_q = 1'b0;\n  always @(posedge clk_a_i) seen_a_q <= "
                       "seen_a_q | done_o;")
    assert "seen_a_q <=" in text
    text = text.replace("  assign ready_o = !busy_q;", "  assign ready_o = !busy_q & !seen_a_q;")
    res = run_gate(T, {T.editable: text})
    initial = [f for f in res.findings if f["rule"] == "POL-INITIAL"]
    assert initial and all("seen_a_q" in f["message"] for f in initial), res.findings  # not req_q


def test_enum_methods_are_written_only_where_the_text_says_what_they_return():
    from cdc_env.gate import synth

    text = ("module m (output logic [1:0] y);\n  typedef enum logic [1:0] {A = 2'd2, B = 2'd0, C = 2'd1} e_t;\n"
            "  e_t s;\n  always_comb y = s.next();\n  always_comb y = s.first;\nendmodule\n")
    out = synth.enum_methods(text)
    assert "((s) == A ? B : (s) == B ? C : (s) == C ? A : e_t'('x))" in out and "(A);" in out
    assert out.count("\n") == text.count("\n")
    # A member name declared again elsewhere (it might not resolve to the member), or the typedef
    # declared twice: left as written.
    # An argument of the enum type in two functions, and a port of it: written (red2 W2).
    fn = text.replace("  e_t s;\n", "  e_t s;\n  function automatic e_t f(input e_t s); return s.next(); endfunction\n"
                      "  function automatic e_t g(input e_t s); return s.prev(); endfunction\n")
    out = synth.enum_methods(fn)
    assert out.count("e_t'('x)") == 3 and ".next" not in out and ".prev" not in out
    port = text.replace("(output logic [1:0] y)", "(input e_t s, output logic [1:0] y)").replace("  e_t s;\n", "")
    assert "(s) == A ? B" in synth.enum_methods(port)
    # The same name declared with another type somewhere in the text: left as written.
    assert ".next()" in synth.enum_methods(fn + "module n; logic [1:0] s; endmodule\n")
    # (A variable declared twice with the one type is written: whichever declaration the name
    # resolves to, the method returns the same; twice in one scope is the front end's error.)
    for extra in ("  logic A;\n", "  typedef enum logic [1:0] {A = 2'd2, B = 2'd0, C = 2'd1} e_t;\n"):
        changed = text.replace("endmodule", extra + "endmodule")
        assert synth.enum_methods(changed) == changed, extra


@pytest.mark.parametrize("extra,rule,words", [
    # an inout argument: yosys-slang reports the call line as "unsupported language feature" (red2 W1)
    ("  logic [3:0] t_q;\n  function automatic void inc(inout logic [3:0] v); v = v + 1; endfunction\n"
     "  always_ff @(posedge clk_a_i or negedge rst_a_ni)\n    if (!rst_a_ni) t_q <= 0;\n"
     "    else begin logic [3:0] n; n = t_q; inc(n); t_q <= n; end",
     "GATE-SYNTH", ("inout argument of function 'inc'", "output argument")),
    # an asynchronous reset written as a ternary (red2 F3)
    ("  logic t_q;\n  always @(posedge clk_a_i or negedge rst_a_ni) t_q <= !rst_a_ni ? 1'b0 : done_o;",
     "GATE-SYNTH", ("if (!rst_n) q <= 0; else q <= d;", "not as a ternary")),
    # an unclosed translate_off region: the cause first, with its line (red2 F2)
    ("  // synopsys translate_off", "GATE-PARSE", ("translate_off region opened at line 43 is never closed",
                                                  "translate_on")),
])
def test_a_refusal_names_the_construct_and_the_rewrite(extra, rule, words):
    text = REF.replace("  assign ready_o = !busy_q;", "  assign ready_o = !busy_q;\n" + extra)
    res = run_gate(T, {T.editable: text})
    assert res.status == "refused" and res.findings[0]["rule"] == rule, res.findings
    assert all(w in res.findings[0]["message"] for w in words), res.findings[0]["message"]
