"""The gate on the synthesized netlist (issue 22): what synthesis keeps and renames, and the finer
points of the netlist rules that the gate_cases pairs do not pin down -- bit-level redundancy,
cdc_ram's data-only rule and its storage declaration, latches, clocks as data, and the
legal-but-unusual code that the netlist makes irrelevant (attributes, `timescale, packages,
use before declaration, instance arrays)."""

from __future__ import annotations

import re

import pytest

from cdc_env import paths
from cdc_env.gate import run_gate, synthesized
from cdc_env.gate.synth import PRIMITIVE_STUBS, PRIMITIVES, plain_name
from cdc_env.task import load_task

HS = load_task("handshake")
FIFO = load_task("fifo_01")
REF = HS.reference_text
ANCHOR = "  // ---------------- crossings ----------------"
REQ = "  cdc_sync_bit u_req_sync (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), .q_o(req_s));"


def gate(text: str, task=HS):
    return run_gate(task, {task.editable: text})


def rules(text: str, task=HS) -> set[str]:
    return {f["rule"] for f in gate(text, task).findings if f["severity"] == "error"}


def test_the_stubs_have_the_trusted_primitives_ports_and_parameters():
    trusted = "".join(p.read_text(encoding="utf-8") for p in paths.primitive_files())
    assert "cdc_hold_bus" in PRIMITIVES
    for module in PRIMITIVES:
        real = re.search(rf"module {module}\b(.*?)\);", trusted, re.S).group(1)
        stub = re.search(rf"module {module}\b(.*?)\);", PRIMITIVE_STUBS, re.S).group(1)
        ports = r"(input|output)\s+wire\s*(\[[^\]]*\])?\s*(\w+)"
        params = r"parameter\s+integer\s+(\w+)"
        for pattern in (ports, params):
            assert re.findall(pattern, stub) == re.findall(pattern, real), module


def test_the_netlist_is_what_the_gate_passes_and_it_keeps_primitive_parameters():
    res = gate(FIFO.reference_text, FIFO)
    assert res.status == "pass" and res.netlist is not None
    text = res.netlist["verilog"]
    assert "module async_fifo(" in text and "u_storage" in text and ".WIDTH(32'd5)" in text
    assert ".AW(32'd4)" in text and "cdc_arst_ff" in text  # its flops all reset asynchronously: the model
    assert res.netlist["flops"] == res.summary["flops"]
    assert res.summary["flops_per_domain"] == {"a": 10, "b": 30}
    assert {p["name"] for p in res.summary["primitives"]} == {"u_storage", "u_wr_ptr_sync", "u_rd_ptr_sync"}
    assert synthesized(FIFO, FIFO.reference_text)[0] == {FIFO.editable: text}


def test_primitive_instance_names_become_plain_identifiers():
    assert plain_name("g[0].u_sync") == "g_0__u_sync"
    assert plain_name("\\9x") == "i_9x"
    long = plain_name("a." * 80)
    assert len(long) <= 100 and re.fullmatch(r"\w+", long)
    text = REF.replace(REQ, "  wire [0:0] rq;\n  assign req_s = rq[0];\n"
                       "  cdc_sync_bit u_arr[0:0] (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req_q), "
                       ".q_o(rq));")
    res = gate(text)
    assert res.status == "pass", res.findings
    assert "cdc_sync_bit u_arr_0_ (" in res.netlist["verilog"] and "\\u_arr" not in res.netlist["verilog"]


@pytest.mark.parametrize("edit", [
    lambda t: "`timescale 1ns/1ps\n" + t,
    lambda t: t.replace("module hs_top", "(* keep_hierarchy *) module hs_top"),
    lambda t: t.replace("  reg  req_q;", "  (* async_reg = \"true\" *) reg  req_q;  // verilator "
                                         "lint_off UNUSED"),
    lambda t: "package hs_pkg; localparam int W = 1; endpackage\n" + t,
    lambda t: t.replace(REQ, REQ.replace("req_q", "req_late") + "\n  wire req_late = req_q;"),
], ids=["timescale", "attribute", "lint-waiver", "package", "use-before-declare"])
def test_code_that_changes_nothing_in_the_netlist_passes(edit):
    res = gate(edit(REF))
    assert res.status == "pass", res.findings


@pytest.mark.parametrize("bad", [
    "  wire [3:0] junk = 4'b2;\n", "  wire [3:0] junk = 4'hG;\n",
    "  reg junk_q;\n  always @(posedge clk_a_i) if (start_i) 'begin junk_q <= 1'b1; end\n"],
                         ids=["b2", "hG", "quote-begin"])
def test_invalid_literals_are_compile_errors_with_the_line(bad):
    from cdc_env.grade import grade

    text = REF.replace(ANCHOR, bad + ANCHOR)
    res = gate(text)
    assert res.parse_only, res.findings
    line = text.splitlines().index(ANCHOR) - bad.count("\n") + 1
    assert any(f["line"] is not None and line <= f["line"] <= line + 1 for f in res.findings), res.findings
    r = grade(HS, text, hidden=0)  # issue 27 item 6: compile_error, not tool_error; nothing is simulated
    assert (r["verdict"], r["failed_stage"]) == ("compile_error", "build"), r["reason"]
    build = next(s for s in r["stages"] if s["name"] == "build")
    assert f"{HS.editable}:" in build["detail"] and "/tmp/" not in build["detail"]


# ----- CDC-REDUNDANT at bit level -----
def test_one_bit_through_24_synchronizers_ored_is_redundant():
    fan = "\n".join(f"  wire r{i};\n  cdc_sync_bit u_r{i} (.clk_i(clk_b_i), .rst_ni(rst_b_ni), "
                    f".d_i(req_q), .q_o(r{i}));"
                    for i in range(24))
    text = REF.replace(REQ, fan + "\n  assign req_s = " + " | ".join(f"r{i}" for i in range(24)) + ";")
    assert "CDC-REDUNDANT" in rules(text)


def test_registers_with_the_same_next_state_are_one_net_and_redundant():
    twin = """  reg  req2_q;
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) req2_q <= 1'b0;
    else if (!busy_q && start_i) req2_q <= ~req2_q;
"""
    text = REF.replace(REQ, twin + "  wire req_s2;\n" + REQ +
                       "\n  cdc_sync_bit u_req2 (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(req2_q), "
                       ".q_o(req_s2));")
    text = text.replace("if (req_s != seen_q)", "if (req_s != seen_q && req_s2 != seen_q)")
    if "req_s2 != seen_q" not in text:
        pytest.skip("the reference fix no longer has this comparison")
    assert "CDC-REDUNDANT" in rules(text)


def test_a_pulse_synchronizer_of_a_signal_already_synchronized_is_redundant():
    extra = """  wire req_p;
  cdc_sync_pulse u_req_pulse (.src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(req_q),
                              .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(req_p));
  reg  req_p_q;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) req_p_q <= 1'b0; else req_p_q <= req_p;
"""
    assert "CDC-REDUNDANT" in rules(REF.replace(ANCHOR, extra + ANCHOR))


def test_different_bits_each_synchronized_once_are_not_redundant():
    assert rules(REF) == set()
    assert rules(FIFO.reference_text, FIFO) == set()


# ----- cdc_ram: storage only where the task declares it, data only -----
RAM = "    .rclk_i(clk_rd_i), .raddr_i(rd_ptr_bin_q[3:0]), .rdata_o(storage_rdata));"


@pytest.mark.parametrize("use", [
    "(storage_rdata == 16'd0)",                      # a comparison
    "(storage_rdata[0] ? 1'b1 : rd_take)",           # a select
    "(rd_take & storage_rdata[3])",                  # logic
    "rd_ptr_gray_q[storage_rdata[2:0]]",              # an index
    "(storage_rdata + 16'd1) != 16'd0",               # arithmetic
])
def test_cdc_ram_read_data_reaching_control_is_refused(use):
    text = FIFO.reference_text.replace("      rd_valid_o <= rd_take;", f"      rd_valid_o <= {use};")
    assert text != FIFO.reference_text
    assert "CDC-MEM" in rules(text, FIFO)


def test_cdc_ram_read_data_on_a_status_output_is_refused():
    text = FIFO.reference_text.replace("assign rd_busy_o = (burst_left_q != 0);", "assign rd_busy_o = "
                                                                                  "storage_rdata[0];")
    assert "CDC-MEM" in rules(text, FIFO)


def test_cdc_ram_in_a_task_without_storage_is_refused():
    extra = """  wire [3:0] rdata;
  cdc_ram #(.WIDTH(4), .AW(1)) u_box (.wclk_i(clk_a_i), .we_i(1'b1), .waddr_i(1'b0), .wdata_i({3'd0, req_q}),
                                      .rclk_i(clk_b_i), .raddr_i(1'b0), .rdata_o(rdata));
"""
    res = gate(REF.replace(ANCHOR, extra + ANCHOR))
    assert any(f["rule"] == "CDC-MEM" and "no storage" in f["message"] for f in res.findings), res.findings


def test_cdc_ram_read_address_from_the_write_domain_is_refused():
    text = FIFO.reference_text.replace(RAM, RAM.replace("rd_ptr_bin_q[3:0]", "wr_ptr_bin_q[3:0]"))
    assert text != FIFO.reference_text and rules(text, FIFO) & {"CDC-RAW", "CDC-MEM"}


# ----- clocks, latches, pulses -----
def test_a_latch_is_refused():
    extra = "  reg lat_q;\n  always @* if (start_i) lat_q = req_q;\n  wire unused_lat = lat_q;\n"
    assert "CDC-CLOCK" in rules(REF.replace(ANCHOR, extra + ANCHOR).replace("assign ready_o = !busy_q;",
                                                                         "assign ready_o = !busy_q | lat_q;"))


def test_a_derived_clock_is_refused():
    extra = "  reg div_q, slow_q;\n  always @(posedge clk_a_i) div_q <= ~div_q;\n" \
            "  always @(posedge div_q) slow_q <= start_i;\n"
    text = REF.replace(ANCHOR, extra + ANCHOR).replace("assign ready_o = !busy_q;", "assign ready_o = "
                                                                                    "!busy_q | slow_q;")
    assert "CDC-CLOCK" in rules(text)


def test_logic_before_a_pulse_synchronizer_passes_but_not_before_a_level_one():
    pulse = """  wire go_p;
  cdc_sync_pulse u_go (.src_clk_i(clk_a_i), .src_rst_ni(rst_a_ni), .pulse_i(start_i & ~busy_q),
                       .dst_clk_i(clk_b_i), .dst_rst_ni(rst_b_ni), .pulse_o(go_p));
  reg go_q;
  always @(posedge clk_b_i or negedge rst_b_ni) if (!rst_b_ni) go_q <= 1'b0; else go_q <= go_p;
"""
    assert rules(REF.replace(ANCHOR, pulse + ANCHOR)) == set()
    assert "CDC-SRCLOGIC" in rules(REF.replace("d_i(req_q)", "d_i(req_q ^ busy_q)"))


def test_findings_name_source_lines_of_the_editable_file():
    res = gate(REF.replace("d_i(req_q)", "d_i(req_q ^ busy_q)"))
    (f,) = [f for f in res.findings if f["rule"] == "CDC-SRCLOGIC"]
    line = REF.splitlines().index(REQ) + 1
    assert f["file"] == HS.editable and f["line"] == line


# ----- the simulated file is the netlist -----
def test_a_grade_simulates_the_netlist_not_the_submitted_text(tmp_path):
    from cdc_env.grade import grade, sha256
    from cdc_env.sim import get_simulator

    if not get_simulator("icarus").available():
        pytest.skip("Icarus is not installed")
    # A comment and a `timescale the netlist drops: the submitted text is not what is built.
    text = "`timescale 1ns/1ps\n// marker-comment-not-in-the-netlist\n" + REF
    r = grade(HS, text, sim="icarus", hidden=0, keep_dir=tmp_path, disable={"stage:visible"})
    assert r["verdict"] == "pass", r["reason"]
    built = [p for p in tmp_path.rglob(HS.editable) if p.parent.name == "design"]
    assert len(built) == 1
    staged = built[0].read_text(encoding="utf-8")
    assert "marker-comment-not-in-the-netlist" not in staged and "`timescale" not in staged
    assert sha256(staged) == r["netlist"]["sha256"] == gate(text).netlist["sha256"]
    assert r["netlist"]["flops"] == 5 and r["netlist"]["cells"] > 0


def test_parametric_black_boxes_keep_their_own_widths():
    # `hierarchy` would resize every cdc_sync_bus to its first parameterization's ports (a #(3)
    # and a #(2) became two #(3)s, padding one input with a constant): the netlist must not.
    text = FIFO.reference_text.replace(
        "  cdc_sync_bus #(.WIDTH(5)) u_wr_ptr_sync (\n    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), "
        ".d_i(wr_ptr_gray_q), .q_o(wr_ptr_sync_rclk));",
        "  cdc_sync_bus #(.WIDTH(3)) u_wr_hi (\n    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), "
        ".d_i(wr_ptr_gray_q[4:2]), .q_o(wr_ptr_sync_rclk[4:2]));\n"
        "  cdc_sync_bus #(.WIDTH(2)) u_wr_lo (\n    .clk_i(clk_rd_i), .rst_ni(rst_rd_ni), "
        ".d_i(wr_ptr_gray_q[1:0]), .q_o(wr_ptr_sync_rclk[1:0]));")
    assert text != FIFO.reference_text
    res = gate(text, FIFO)
    assert res.status == "pass", res.findings
    widths = {c["primitive"]: len(c["bits"]) for c in res.summary["crossings"]}
    assert widths == {"u_wr_hi": 3, "u_wr_lo": 2, "u_rd_ptr_sync": 5, "u_storage": 1}
    assert "1'h0, wr_ptr_gray_q" not in res.netlist["verilog"]


def test_cdc_ram_read_data_as_an_index_into_the_data_output_is_refused():
    # The index of a selection is its control, not its data: rd_data_o would carry rd_fill chosen
    # by the storage word, a crossing of rd_fill's meaning through cdc_ram.
    text = FIFO.reference_text.replace("        rd_data_o <= storage_rdata;",
                                       "        rd_data_o <= {15'd0, rd_fill[storage_rdata[2:0]]};")
    assert text != FIFO.reference_text
    res = gate(text, FIFO)
    assert any(f["rule"] == "CDC-MEM" and "read data" in f["message"] for f in res.findings), res.findings


def test_cli_check_netlist_prints_what_is_simulated(capsys):
    import json

    from cdc_env.cli import main

    assert main(["check", "--netlist", "--json", "fifo_01", str(FIFO.path(FIFO.reference))]) == 0
    out = json.loads(capsys.readouterr().out)
    n = out["netlist"]
    assert n["sha256"] == gate(FIFO.reference_text, FIFO).netlist["sha256"]
    assert "module async_fifo(" in n["verilog"]
    assert n["summary"]["flops_per_domain"] == {"a": 10, "b": 30}
    assert {(c["primitive"], c["from"], c["to"]) for c in n["summary"]["crossings"]} == {
        ("u_wr_ptr_sync", "a", "b"), ("u_rd_ptr_sync", "b", "a"), ("u_storage", "a", "b")}
    assert main(["check", "--netlist", "handshake", str(HS.path(HS.reference))]) == 0
    text = capsys.readouterr().out
    assert "domain a: 3 flop bits" in text and "crossing a -> b through u_req_sync" in text
    assert "module hs_top(" in text


STATIC_FN = """
  function {lifetime}[0:0] pass_through(input [0:0] v);
    pass_through = v;
  endfunction
  reg  flip_a_q, flip_b_q, flip_a_n;
  always @* flip_a_n = pass_through(busy_q);
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) flip_a_q <= 1'b0; else flip_a_q <= flip_a_n;
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) flip_b_q <= 1'b0; else flip_b_q <= pass_through(seen_q);
"""


def test_a_function_called_in_two_domains_is_automatic_unless_declared_static():
    """Synthesis takes every module as ``module automatic`` (what the RTL means: each call writes
    its argument before reading it). Without that, a static function's argument called from a
    domain-a block and a domain-b block became one variable with two drivers -- a false CDC-RAW.
    A function the design declares ``static`` keeps one variable: two drivers, refused."""
    plain = REF.replace(ANCHOR, STATIC_FN.format(lifetime="") + ANCHOR)
    assert gate(plain).status == "pass", gate(plain).findings
    static = REF.replace(ANCHOR, STATIC_FN.format(lifetime="static ") + ANCHOR)
    found = [f for f in gate(static).findings if f["rule"] == "GATE-SYNTH"]
    assert found and "drivers" in found[0]["message"], gate(static).findings


def test_identical_bits_of_one_wide_register_are_one_value():
    """Bit i of a wide mux/and/or depends on bit i of its data inputs only: 8 bits that all load the
    same value are one class, so synchronizing each of them is redundant (and a Gray pointer's
    bits, which load different values, are not)."""
    copies = REF.replace("reg  ack_q;", "reg  ack_q;\n  reg [7:0] ack8_q;\n  wire [7:0] ack8_s;").replace(
        ANCHOR, """  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) ack8_q <= 8'd0; else if (req_s != seen_q) ack8_q <= {8{req_s}};
  genvar k;
  generate for (k = 0; k < 8; k = k + 1) begin : g_c
    cdc_sync_bit u_c (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ack8_q[k]), .q_o(ack8_s[k]));
  end endgenerate
""" + ANCHOR)
    assert "reg [7:0] ack8_q" in copies
    assert "CDC-REDUNDANT" in rules(copies), gate(copies).findings


def test_a_ref_argument_is_refused_because_synthesis_drops_writes_through_it():
    """Yosys's slang frontend turned `copy_in(req_cp, req_q)` with `ref logic dst` into
    `req_cp = 1'hx`: a silently different netlist. The policy refuses ref arguments instead."""
    text = REF.replace(ANCHOR, """  logic cp_q;
  task automatic copy_in(ref logic dst, input logic src);
    dst = src;
  endtask
  always @(posedge clk_a_i) copy_in(cp_q, busy_q);
""" + ANCHOR)
    found = [f for f in gate(text).findings if f["rule"] == "POL-CONSTRUCT"]
    assert found and "ref argument" in found[0]["message"]


def test_no_x_or_z_constant_and_no_undriven_net_reaches_the_simulators():
    """A don't-care constant or an undriven net is X on Icarus and 0 on Verilator: two designs. The
    netlist has none (setundef -zero -undriven): ready_o of 1'bx while busy failed on Icarus
    (X on an output) and passed on Verilator before; both now build ready_o = !busy_q."""
    text = REF.replace("assign ready_o = !busy_q;", "assign ready_o = busy_q ? 1'bx : 1'b1;\n  wire nobody;")
    text = text.replace("done_o <= 1'b1;", "done_o <= 1'b1 | nobody;")
    assert "1'bx" in text and "| nobody" in text
    res = gate(text)
    assert res.status == "pass", res.findings
    body = res.netlist["verilog"]
    assert not re.search(r"\d+'[bhd][0-9a-fA-F]*[xXzZ]", body), body


def test_a_combinational_loop_inside_one_domain_is_refused():
    """Two NOR gates feeding each other store a bit without a clock; the simulators settle such a
    loop differently, so it is refused like any latch (CDC-CLOCK), even inside one domain."""
    text = REF.replace(ANCHOR, """  wire s_n, r_n;
  assign s_n = ~(busy_q | r_n);
  assign r_n = ~(done_o | s_n);
""" + ANCHOR).replace("assign ready_o = !busy_q;", "assign ready_o = !busy_q & r_n;")
    assert "& r_n;" in text
    found = [f for f in gate(text).findings if f["rule"] == "CDC-CLOCK"]
    assert found and "combinational loop" in found[0]["message"], gate(text).findings
    assert gate(REF).status == "pass"


RST = load_task("rst_01")
RING = """  always @(posedge clk_a_i or negedge rst_a_n) begin
    if (!rst_a_n) st_a_q <= 4'b0001;"""


@pytest.mark.parametrize("enable", ["", "else if (up_a_q) "])
def test_asynchronously_loaded_flops_run_the_late_release_model(enable):
    # The ring loads a signal (another register's value) while the raw system reset is low: an
    # asynchronous load ($aldff, $aldffe with an enable). The simulated netlist must give it the
    # late-release model like any asynchronously reset flop -- as written, its release never came
    # late and the defect passed every seed (fixture rst-async-load-raw-system-reset).
    seed = ("  reg [3:0] seed_a_q;\n  always @(posedge clk_a_i or negedge rst_a_n)\n"
            "    if (!rst_a_n) seed_a_q <= 4'b0001; else seed_a_q <= {seed_a_q[2:0], seed_a_q[3]};\n")
    text = RST.clean_text.replace("  reg [3:0] st_a_q;\n", "  reg [3:0] st_a_q;\n" + seed)
    text = text.replace(RING, RING.replace("4'b0001;", "seed_a_q;"))
    text = text.replace("    else st_a_q <= {st_a_q[2:0]", f"    {enable or 'else '}st_a_q <= {{st_a_q[2:0]")
    res = gate(text, RST)
    assert res.status == "pass", res.findings
    v = res.netlist["verilog"]
    # no flop of the netlist keeps an asynchronous control of its own (two events in one list)
    assert not re.search(r"always @\((pos|neg)edge [^)]*, (pos|neg)edge", v), v
    keyed = re.findall(r"cdc_arst_ff #\((?:[^()]|\([^()]*\))*\.KEY\(32'd(\d+)\)", v)
    # the seed, the ring (the asynchronous load), the counter and the up flag: each its own model
    assert len(keyed) == 4 and len(set(keyed)) == 4, keyed


def test_per_bit_set_and_clear_flops_map_onto_the_model_too(tmp_path):
    # The slang front end never makes a $dffsr today (two asynchronous controls are refused as
    # GATE-SYNTH), but the mapping covers it: every bit becomes an asynchronous load of 0 or 1.
    import subprocess
    import sys

    from cdc_env.gate.synth import ALOAD_MAP

    (tmp_path / "map.v").write_text(ALOAD_MAP)
    (tmp_path / "t.il").write_text(
        "module \\t\n  wire input 1 \\c\n  wire width 3 input 2 \\s\n  wire width 3 input 3 \\r\n"
        "  wire width 3 input 4 \\d\n  wire width 3 output 5 \\q\n"
        "  cell $dffsr \\ff\n    parameter \\WIDTH 3\n    parameter \\CLK_POLARITY 1'1\n"
        "    parameter \\SET_POLARITY 1'1\n    parameter \\CLR_POLARITY 1'0\n"
        "    connect \\CLK \\c\n    connect \\SET \\s\n    connect \\CLR \\r\n    connect \\D \\d\n"
        "    connect \\Q \\q\n  end\nend\n")
    script = ("from pyosys import libyosys as ys\nd = ys.Design()\n"
              "ys.run_pass('read_rtlil t.il; techmap -map map.v; opt_clean; "
              "write_verilog -noattr out.v', d)\n")
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    v = (tmp_path / "out.v").read_text()
    assert v.count("cdc_arst_ff") == 3 and "$dffsr" not in v and "$aldff" not in v, v


def test_cdc_ram_read_data_kept_in_a_local_memory_is_still_data():
    # The read word kept in a one-entry memory of the read domain: data stored as data, not
    # control (refused before: the walk stopped at the memory write). The same memory read back
    # into a comparison is control one memory removed, and stays refused.
    kept = (paths.fixtures_dir() / "ok-fifo-read-word-in-local-memory" / "submission.v").read_text()
    assert rules(kept, FIFO) == set(), gate(kept, FIFO).findings
    steer_path = paths.fixtures_dir() / "cdc-ram-data-through-local-memory-to-decision" / "submission.v"
    steer = steer_path.read_text()
    found = [f for f in gate(steer, FIFO).findings if f["rule"] == "CDC-MEM"]
    assert found and "reaches logic (ne)" in found[0]["message"], found


def test_a_parallel_case_comment_never_reaches_the_simulators():
    """write_verilog prints a $pmux as a casez marked "// synopsys parallel_case"; Verilator makes
    that an assertion that stops the run when two selects are high, Icarus ignores it. A `unique
    case (1'b1)` whose conditions overlap then passed on Icarus and ended without a verdict on
    Verilator (fixture ok-hs-unique-case-overlapping-conditions): the netlist carries no such
    comment, so both run the casez as written (first match)."""
    text = REF.replace("  assign ready_o = !busy_q;\n", """  reg [1:0] why_q;
  always @(posedge clk_a_i or negedge rst_a_ni) begin
    if (!rst_a_ni) why_q <= 2'd0;
    else begin
      unique case (1'b1)
        start_i: why_q <= 2'd1;
        busy_q:  why_q <= 2'd2;
        default: why_q <= 2'd0;
      endcase
    end
  end
  assign ready_o = !busy_q | (why_q == 2'd3);
""")
    res = gate(text)
    assert res.status == "pass"
    verilog = res.netlist["verilog"]
    assert re.search(r"^\s*casez \(", verilog, re.M)  # the $pmux is there, as a casez
    assert "synopsys" not in verilog and "parallel_case" not in verilog


HELD_LOAD = """  reg [3:0] seed_a_q;
  always @(posedge clk_a_i or negedge run_a_n) begin
    if (!run_a_n) seed_a_q <= 4'b0001;
    else seed_a_q <= st_a_q;
  end
  reg [3:0] st_a_q;
  always @(posedge clk_a_i or negedge arst_ni) begin
    if (!arst_ni) st_a_q <= seed_a_q;
    else st_a_q <= run_a_n ? {st_a_q[2:0], st_a_q[3]} : 4'b0001;
  end"""


def _held_load_text() -> str:
    # fixture ok-rst-raw-assert-run-qualifier with the ring's raw reset written as an asynchronous
    # load of a register (0001 while domain a's own reset is asserted), held at that value by a
    # condition on run_a_n (fixture ok-rst-async-load-held-by-condition)
    text = (paths.fixtures_dir() / "ok-rst-raw-assert-run-qualifier" / "submission.v").read_text()
    old = text[text.index("  reg [3:0] st_a_q;"):text.index("  assign ring_a_o")]
    return text.replace(old, HELD_LOAD + "\n")


def test_an_asynchronous_load_keeps_its_synchronous_condition():
    # Yosys 0.70's opt_dff made "else q <= c ? CONST : x" on an $aldff a synchronous reset the cell
    # cannot carry, and dropped c: the ring rotated from the raw release on, where the source holds
    # it until run_a_n. Such netlists are optimised with -nosdff.
    res = gate(_held_load_text(), RST)
    assert res.status == "pass", res.findings
    v = res.netlist["verilog"]
    assert re.search(r"run_a_n \? \{ st_a_q\[2:0\], st_a_q\[3\] \} : 4'h1", v), v


def test_an_asynchronous_load_that_does_not_change_on_its_release_is_no_recovery_violation():
    # The held-value flop of the load's mapping clears only where the clocked value differs from
    # the loaded one, so the model's recovery check sees what changes (here: nothing, the ring is
    # held at its loaded value): its D is a per-bit comparison, never a constant 0.
    v = gate(_held_load_text(), RST).netlist["verilog"]
    cell = r"cdc_arst_ff #\((?:[^()]|\([^()]*\))*\) (\S*held\S*) "
    held = re.search(cell + r"\((?:[^()]|\([^()]*\))*\.D\(([^)]*)\)", v)
    assert held, v
    assert not re.fullmatch(r"\d+'h0", held.group(2).strip()), held.group(0)
    assert v.count(" === ") >= 4


# ----- $bwmux: a write through a variable index -----
EVT = load_task("event")
INDEXED_TOGGLES = """module evt_top (
  input  wire clk_a_i, input wire rst_a_ni, input wire clk_b_i, input wire rst_b_ni,
  input  wire evt_i, input wire evt_kind_i,
  output reg [15:0] data_cnt_o, output reg [15:0] mark_cnt_o
);
  reg [1:0] tog_q;
  always @(posedge clk_a_i or negedge rst_a_ni)
    if (!rst_a_ni) tog_q <= 2'b00;
    else if (evt_i) tog_q[evt_kind_i] <= ~tog_q[evt_kind_i];
  wire [1:0] tog_s; reg [1:0] seen_q;
  cdc_sync_bus #(.WIDTH(2)) u_tog (.clk_i(clk_b_i), .rst_ni(rst_b_ni), .d_i(tog_q), .q_o(tog_s));
  always @(posedge clk_b_i or negedge rst_b_ni)
    if (!rst_b_ni) begin seen_q <= 2'b00; data_cnt_o <= 16'd0; mark_cnt_o <= 16'd0; end
    else begin
      seen_q <= tog_s;
      if (tog_s[0] ^ seen_q[0]) data_cnt_o <= data_cnt_o + 16'd1;
      if (tog_s[1] ^ seen_q[1]) mark_cnt_o <= mark_cnt_o + 16'd1;
    end
endmodule
"""


def test_toggles_written_through_one_variable_index_are_not_one_value():
    """``tog_q[kind] <= ~tog_q[kind]`` is one $bwmux whose select differs per bit (kind == 0 for
    bit 0, kind == 1 for bit 1): two different toggles, not copies. The flop-class hash took the
    whole select for every bit and called them redundant (fixture ok-evt-indexed-toggle-bus)."""
    res = gate(INDEXED_TOGGLES, EVT)
    assert {f["rule"] for f in res.findings} == set(), res.findings


def test_a_bitwise_mux_reaches_the_simulators_as_gates():
    """write_verilog prints a $bwmux as an instance of a module no simulator has: a variable-index
    write failed to build (compile_error) after the gate had passed it (fixture
    ok-evt-counter-bank-indexed). The simulated netlist has the same function in gates."""
    res = gate(INDEXED_TOGGLES, EVT)
    assert res.status == "pass"
    assert "$bwmux" not in res.netlist["verilog"] and "bwmux" not in res.netlist["verilog"]


def test_copies_written_through_one_variable_index_are_still_redundant():
    """Both bits toggled on every event, each through its own indexed write (two $bwmux, selects
    that differ per bit): the same function of the same flops, so copies -- whatever the shape."""
    copies = INDEXED_TOGGLES.replace("tog_q[evt_kind_i] <= ~tog_q[evt_kind_i];",
                                     "begin tog_q[evt_kind_i] <= ~tog_q[evt_kind_i]; "
                                     "tog_q[!evt_kind_i] <= ~tog_q[!evt_kind_i]; end")
    assert "CDC-REDUNDANT" in rules(copies, EVT)


def test_copies_made_by_different_logic_of_the_same_value_are_redundant():
    """Copy k of the ack is (ack & m_k) | (ack & ~m_k), m_k a different live bit: always the ack,
    never the same logic. The structural classes saw two values (fixture
    cdc-redundant-copies-live-identity passed the gate); the truth table sees one."""
    text = REF.replace("  reg  ack_q;      // the request toggle acknowledged (a level)",
                       "  reg  ack_q;      // the request toggle acknowledged (a level)\n"
                       "  reg  [1:0] m_q;\n  reg  [1:0] ackc_q;")
    text = text.replace("      served_o <= 1'b0;\n      if (req_s != seen_q) begin",
                        "      served_o <= 1'b0;\n      m_q <= m_q + 2'd1;\n"
                        "      ackc_q[0] <= (ack_q & m_q[0]) | (ack_q & ~m_q[0]);\n"
                        "      ackc_q[1] <= (ack_q & m_q[1]) | (ack_q & ~m_q[1]);\n"
                        "      if (req_s != seen_q) begin")
    text = text.replace("      seen_q   <= 1'b0;\n", "      seen_q   <= 1'b0;\n      m_q <= 2'd0;\n"
                        "      ackc_q <= 2'd0;\n")
    sync = ("  cdc_sync_bit u_ack{k} (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ackc_q[{k}]), "
            ".q_o(ack_v[{k}]));\n")
    text = text.replace("  cdc_sync_bit u_ack_sync (.clk_i(clk_a_i), .rst_ni(rst_a_ni), .d_i(ack_q), "
                        ".q_o(ack_s));",
                        "  wire [1:0] ack_v;\n" + sync.format(k=0) + sync.format(k=1)
                        + "  assign ack_s = |ack_v;")
    assert text.count("ackc_q") == 6 and "m_q <= 2'd0" in text, "the reference fix changed"
    assert "CDC-REDUNDANT" in rules(text), gate(text).findings


# ----- a register the reset branch assigns and the clocked branch does not (or only in part) -----
# yosys-slang built no flop for such bits and drove them with x (then 0): the design's register
# lost its reset value and a correct design failed silently (red team hr3). synth.held_registers.
LOADED_ONLY = REF.replace("  reg  busy_q;\n", "  reg  busy_q;\n  reg  [3:0] one_q;\n", 1).replace(
    "      busy_q <= 1'b0;\n", "      busy_q <= 1'b0;\n      one_q  <= 4'd1;\n", 1).replace(
    "busy_q && ack_s == req_q)", "busy_q && ack_s == req_q && one_q == 4'd1)", 1)
LOADED_IN_PART = REF.replace("  reg  busy_q;\n", "  reg  busy_q;\n  reg  [3:0] mode_q;\n", 1).replace(
    "      busy_q <= 1'b0;\n", "      busy_q <= 1'b0;\n      mode_q <= 4'b1000;\n", 1).replace(
    "      done_o <= 1'b0;\n      if (",
    "      done_o <= 1'b0;\n      mode_q[0] <= start_i;\n      if (", 1).replace(
    "busy_q && ack_s == req_q)", "busy_q && ack_s == req_q && mode_q[3])", 1)


# bare ifs (no else, which the front end refused as an asynchronous load) in a generate block, on
# an active-high reset: the front end names these variables by their path (g_k[0].kq)
LOADED_IN_GENERATE = REF.replace("  reg  busy_q;\n", """  reg  busy_q;
  wire rst_a = ~rst_a_ni;
  wire [1:0] gk;
  genvar gi;
  generate for (gi = 0; gi < 2; gi = gi + 1) begin : g_k
    reg kq;
    always @(posedge clk_a_i or posedge rst_a) if (rst_a) kq <= 1'b1;
    assign gk[gi] = kq;
  end endgenerate
""", 1).replace("busy_q && ack_s == req_q)", "busy_q && ack_s == req_q && gk == 2'b11)", 1)


@pytest.mark.parametrize("text", [LOADED_ONLY, LOADED_IN_PART, LOADED_IN_GENERATE],
                         ids=["whole", "in-part", "generate-bare-if"])
def test_a_register_loaded_only_by_its_reset_keeps_the_reset_value(text):
    uses = ("one_q == 4'd1", "&& mode_q[3]", "&& gk == 2'b11")
    assert sum(text.count(u) for u in uses) == 1, "the edit no longer applies to the reference"
    res = gate(text)
    assert res.status == "pass", res.findings
    v = res.netlist["verilog"]
    if "one_q" in text:
        assert "assign one_q = 4'h1;" in v, v
    elif "gk ==" in text:
        assert "gk = 2'h3;" in v, v
    else:  # the bits only the reset writes keep its value (100), where they were a constant 0
        assert "assign mode_q[3:1] = 3'h4;" in v, v
    from cdc_env.grade import grade

    r = grade(HS, text, sim="icarus", hidden=8)
    assert r["verdict"] == "pass", (r["reason"], [s for s in r["stages"] if s["status"] != "pass"])


def test_holds_are_written_only_where_they_cannot_change_meaning():
    from cdc_env.gate.synth import held_registers

    text = """module m(input c, r, d, output reg q, output reg [1:0] w, output reg t, output reg z);
  reg [7:0] mem [0:3]; integer i; reg b;
  always @(posedge c or negedge r)
    if (!r) begin q <= 0; w <= 2'b01; mem[0] <= 0; i = 0; b <= 1; end else {q, w[0]} <= {d, d};
  always @(posedge c or negedge r) begin : blk
    reg loc;
    if (!r) begin t <= 1; loc <= 0; end else begin loc = d; t <= loc; i++; end
  end
  always @* b = d;
  always @(posedge c) if (!r) z <= d;
endmodule
"""
    out = held_registers(text, frozenset({"q", "w", "t", "mem", "i", "loc", "b", "z"}))
    # one line each, inserted where the blocks start: line numbers do not move
    assert out.count("\n") == text.count("\n")
    assert "begin q <= q; w <= w; if (!r)" in out
    assert "t <= t; if (!r)" in out  # after the named block's declaration
    # a memory; blocking writes; declared in the block; two processes; a block with one edge
    for name in ("mem", "i", "loc", "b", "z"):
        assert f"{name} <= {name};" not in out, name
    assert held_registers(text, frozenset()) == text


def test_a_synchronizer_input_that_is_its_flop_through_cells_is_that_flop():
    """``ack_q ? 1'b1 : 1'b0`` (what a 1-bit enum compare becomes) and ``!(!req_q)`` compute the
    flop and cannot glitch: the gate takes them as the flop (CDC-SRCLOGIC refused them before)
    and the simulators get d_i on the flop itself (Icarus evaluated the cell at time 0 and saw X
    on d_i before the resets were asserted). An inversion or a second input bit stays logic."""
    text = REF.replace("d_i(ack_q)", "d_i(ack_q ? 1'b1 : 1'b0)").replace("d_i(req_q)", "d_i(!(!req_q))")
    res = gate(text)
    assert res.status == "pass", res.findings
    body = res.netlist["verilog"]
    ins = sorted(re.findall(r"\.d_i\(([^)]*)\)", body))
    assert ins == ["req_q", "seen_q"], ins  # ack_q and seen_q are one flop after opt_merge
    assert "CDC-SRCLOGIC" in rules(REF.replace("d_i(ack_q)", "d_i(ack_q ? 1'b0 : 1'b1)"))
    assert "CDC-SRCLOGIC" in rules(REF.replace("d_i(ack_q)", "d_i(ack_q ? served_o : ack_q)"))
    assert "CDC-SRCLOGIC" in rules(REF.replace("d_i(ack_q)", "d_i(ack_q & ack_q & served_o | ack_q)"))
    # the wire is the flop for redundancy too: the flop and its wire into one domain are two copies
    copy = ("  wire ack_s2;\n  cdc_sync_bit u_ack_sync2 (.clk_i(clk_a_i), .rst_ni(rst_a_ni), "
            ".d_i(ack_q ? 1'b1 : 1'b0), .q_o(ack_s2));\n")
    twice = REF.replace(ANCHOR, copy + ANCHOR).replace("ack_s == req_q", "ack_s == req_q && ack_s2 == req_q")
    assert rules(twice) == {"CDC-REDUNDANT"}


def test_a_flop_read_by_a_synchronizer_through_a_wire_of_cells_keeps_the_recovery_exemption():
    """The 'domain a is up' flag of ok-rst-raw-assert-run-qualifier, released out of step and read
    only by a synchronizer, is exempt from the recovery check; written ``up_a_q ? 1'b1 : 1'b0`` on
    d_i it is still read only by that synchronizer (the simulators get d_i on the flop), so it
    stays exempt."""
    task = load_task("rst_01")
    text = (paths.fixtures_dir() / "ok-rst-raw-assert-run-qualifier" / "submission.v").read_text()
    wired = text.replace(".d_i(up_a_q)", ".d_i(up_a_q ? 1'b1 : 1'b0)")
    assert wired != text

    def off(t: str) -> set[str]:
        res = run_gate(task, {task.editable: t})
        assert res.status == "pass", res.findings
        cells = re.findall(r"cdc_arst_ff #\(((?:[^()]|\([^()]*\))*)\)\s*(\S+) \(", res.netlist["verilog"])
        return {name for params, name in cells if ".RECOVERY(1'h0)" in params}

    assert off(wired) == off(text) == {"ff_up_a_q"}


@pytest.mark.parametrize("keyword", ["priority", "unique", "unique0"])
def test_a_qualified_if_in_an_asynchronously_reset_block_synthesizes(keyword):
    """yosys-slang refused ``priority if (!rst_n) ... else ...`` as an asynchronous load (GATE-SYNTH
    on a correct design). The keyword is blanked before synthesis (synth.plain_async_ifs): the
    netlist is the reference's, and a qualified if elsewhere is left as written."""
    from cdc_env.gate.synth import plain_async_ifs

    head = "always @(posedge clk_a_i or negedge rst_a_ni) begin\n    if (!rst_a_ni)"
    assert head in REF
    text = REF.replace(head, head.replace("if (", f"{keyword} if ("), 1)
    res = gate(text)
    assert res.status == "pass", res.findings
    assert res.netlist["sha256"] == gate(REF).netlist["sha256"]
    comb = f"module m(input a, b, output reg y);\n  always @* {keyword} if (a) y = 1; else y = b;\nendmodule"
    assert plain_async_ifs(comb) == comb
    blanked = plain_async_ifs(text)
    assert len(blanked) == len(text) and f"{keyword} if" not in blanked
