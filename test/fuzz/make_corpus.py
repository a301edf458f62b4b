#!/usr/bin/env python3
"""Regenerates test/fuzz/corpus: malformed model files, each of which the front end must reject
with an error (exit 1) and without a crash. Deterministic (seeded); run from anywhere."""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus")


def example(name):
    with open(os.path.join(ROOT, "examples", name + ".hector"), "rb") as f:
        return f.read()


def main():
    rng = random.Random(20240601)
    files = {}
    files["empty"] = b""
    files["comment_only"] = b"# nothing but a comment\n"
    files["whitespace_only"] = b" \t\r\n\n   \n"
    # Truncations of the examples (cut inside the last layer, so each is incomplete).
    for name in ["rgcn", "rgat", "hgt", "rgcn_aifb", "rgat_pyg"]:
        text = example(name)
        for frac in [0.3, 0.6, 0.9]:
            files["trunc_%s_%d" % (name, int(frac * 100))] = text[: int(len(text) * frac)]
        files["trunc_%s_last_brace" % name] = text.rstrip()[:-1]
    # Random bytes, and random printable tokens.
    for i in range(4):
        files["random_bytes_%d" % i] = bytes(rng.randrange(256) for _ in range(300 + 200 * i))
    alphabet = ["layer", "l", "(", ")", "{", "}", "[", "]", "=", ";", ",", ":", "node", "edge",
                "input", "weight", "output", "src", ".", "x", "1", "+", "*", "sum", "heads"]
    for i in range(3):
        files["random_tokens_%d" % i] = " ".join(rng.choice(alphabet) for _ in range(400)).encode()
    # Deep nesting and long chains.
    files["deep_parens"] = b"layer l() { node y = " + b"(" * 20000 + b"1" + b")" * 20000 + b"; output y; }"
    files["deep_unclosed_parens"] = b"layer l() { node y = " + b"(" * 50000
    files["deep_unary"] = b"layer l() { node y = " + b"-" * 50000 + b"1; output y; }"
    files["long_sum_chain"] = b"layer l() { input x: node[1]; node y = x" + b" + x" * 30000 + b"; output y; }"
    files["deep_calls"] = b"layer l() { input x: node[1]; node y = " + b"relu(" * 10000 + b"x" + b")" * 10000 + b"; output y; }"
    files["deep_braces"] = b"{" * 10000 + b"}" * 10000
    chain = b"layer l0() { input x: node[1]; output x; }\n"
    for i in range(1, 60):
        chain += b"layer l%d() { input x: node[1]; layer s = l%d(); node y = s(x); output y; }\n" % (i, i - 1)
    files["deep_sublayers"] = chain
    blow = b"layer b0() { input x: node[1]; node y = relu(x); output y; }\n"
    for i in range(1, 16):
        blow += b"layer b%d() { input x: node[1]; layer s = b%d(); node y = s(s(s(s(x)))); output y; }\n" % (i, i - 1)
    files["exponential_inlining"] = blow
    files["recursive_layers"] = (b"layer a() { input x: node[1]; layer s = b(); node y = s(x); output y; }\n"
                                 b"layer b() { input x: node[1]; layer s = a(); node y = s(x); output y; }\n")
    # Huge and malformed numbers.
    files["huge_int"] = b"layer l(n = 99999999999999999999999999999) { input x: node[n]; output x; }"
    files["huge_float"] = b"layer l(n = 1e400) { input x: node[n]; output x; }"
    files["tiny_float"] = b"layer l(n = 1e-400) { input x: node[1]; output x; }"
    files["huge_dim"] = b"layer l(n = 3e10) { input x: node[n, n]; output x; }"
    files["overflow_fold"] = b"layer l(n = 1e308 * 10) { input x: node[1]; output x; }"
    files["bad_numbers"] = b"layer l(a = 1., b = 1e, c = 0x10, d = 1.2.3) { input x: node[1]; output x; }"
    files["zero_division"] = b"layer l(a = 1 / 0) { input x: node[1]; output x; }"
    files["huge_concat"] = (b"layer l() { input x: node[2000000000]; node y = concat(x, x, x); output y; }")
    files["huge_merge"] = (b"layer l(heads H = 2000000000) { input x: node[H, 2000000000]; "
                           b"node y = merge_heads(x); output y; }")
    # Bytes that are not text.
    rgcn = example("rgcn")
    files["non_utf8"] = rgcn.replace(b"sum(m)", b"sum(\xff\xfe m)")
    files["overlong_utf8"] = rgcn.replace(b"bias;", b"bias\xc0\xaf;")
    files["lone_continuation"] = b"\x80\x80\x80layer\x80"
    files["utf8_identifier"] = rgcn.replace(b"edge m", b"edge m\xc3\xa9")
    files["nul_inside"] = rgcn.replace(b"output h;", b"output\x00 h;")
    files["all_nuls"] = b"\x00" * 1000
    files["crlf_with_error"] = rgcn.replace(b"\n", b"\r\n").replace(b"output h;", b"output q;")
    files["tabs_with_error"] = b"layer l() {\n\tinput x:\tnode[1];\n\tnode y =\tq;\n\toutput y;\n}\n"
    files["many_errors"] = b"@\n" * 500
    files["missing_semicolons"] = rgcn.replace(b";", b"")
    files["unclosed_brackets"] = b"layer l() { input x: node[1; weight W: relation[1, 1; output x; }"
    files["no_layer_keyword"] = b"rgcn(in = 16) { input x: node[in]; output x; }"
    files["statement_outside_layer"] = b"node h = 1;\n" + rgcn
    # Semantic errors.
    files["space_errors"] = rgcn.replace(b"sum(m)", b"m").replace(b"src.x", b"x")
    files["relation_weight_in_node"] = rgcn.replace(b"linear(x, root)", b"linear(x, W)")
    files["heads_mismatch"] = example("rgat").replace(b"relation[H, d];\n  weight a_dst", b"relation[d];\n  weight a_dst")
    files["two_layers_same_name"] = rgcn + rgcn
    for name, data in files.items():
        with open(os.path.join(OUT, name + ".hector"), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(files), OUT))


if __name__ == "__main__":
    main()
