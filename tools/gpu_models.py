"""GPU check of the compiled models (run by tools/gpu-check.sh on a machine without MLIR).

Builds the emitted packages of gpu-packages/ (tools/gpu-check-prepare.sh) against the runtime,
then, for every `check-*` package (and every layer of a `user-*` package, on the awkward graphs
only): the CUDA forward and gradients (the compiled backward) against
the CPU ones of the same library, and the forward against PyG (on the GPU where PyG has the
layer), in float64, float32 and float32 with TF32 allowed for the CUDA call (its GEMMs on tensor
cores), on awkward random graphs and on AIFB/UMLS; for every `bench-*` package: inference time
and peak memory of ours (float32, and with TF32 allowed) and PyG's layer side by side on AIFB,
as ratios. Without a GPU it runs the CPU half, which is how
the script itself is tested.

    python tools/gpu_models.py --packages gpu-packages --runtime build-gpu --json out.json
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "gpu-packages"
sys.path.insert(0, str(ROOT / "runtime" / "python"))
sys.path.insert(0, str(ROOT / "test" / "python"))


def real_graph(name):
    """AIFB or UMLS: from the packages' graphs/ (written by gpu-check-prepare.sh), else loaded from
    ../shared/data; None when neither is there."""
    import torch
    from references import TestGraph
    saved = PACKAGES / "graphs" / f"{name}.pt"
    if saved.is_file():
        return TestGraph(**torch.load(saved))
    if (ROOT.parent / "shared" / "data" / name).is_dir():
        from test_models import real_graph as load
        return load(name)
    return None


def build_package(pkg: pathlib.Path, runtime: pathlib.Path, cuda: bool, jobs: int):
    """Configures and builds one package in a fresh pkg/build (a cache from another machine or
    path would make the configure fail); (name, library or None, seconds, log tail). Packages
    that are only compared with the CPU path and PyG build at lower levels, which compile several
    times faster: user-* at -O0 (its one CUDA source, every layer of the user models, each for up
    to four element types, takes minutes at -O3 on one core), check-* at -O1. The bench-* and
    the benchmarks' scale-* packages, timed and at full size checked against PyG, build at the
    default -O3."""
    import shutil
    import torch.utils
    build = pkg / "build"
    shutil.rmtree(build, ignore_errors=True)
    torch_dir = pathlib.Path(torch.utils.cmake_prefix_path) / "Torch"
    cmd = ["cmake", "-S", str(pkg), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
           f"-DTorch_DIR={torch_dir}",
           f"-DHECTOR_RUNTIME_DIR={runtime}", "-DHECTOR_CUDA_ARCHITECTURES=90",
           f"-DHECTOR_ENABLE_CUDA={'ON' if cuda else 'OFF'}"]
    if pkg.name.startswith(("user-", "check-")):
        cmd.append(f"-DHECTOR_OPT_LEVEL={0 if pkg.name.startswith('user-') else 1}")
    if shutil.which("ninja"):
        cmd += ["-G", "Ninja"]
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if cuda:
        cmd += [f"-DCMAKE_CUDA_COMPILER={nvcc}", "-DHECTOR_REQUIRE_CUDA=ON"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode == 0:
        r = subprocess.run(["cmake", "--build", str(build), "-j", str(jobs)], capture_output=True,
                           text=True)
    libs = sorted(build.glob("lib*.so"))
    if r.returncode != 0 or not libs:
        return pkg.name, None, time.time() - t0, r.stdout[-4000:] + r.stderr[-4000:]
    return pkg.name, libs[0], time.time() - t0, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packages", type=pathlib.Path, default=ROOT / "gpu-packages")
    ap.add_argument("--runtime", type=pathlib.Path, required=True,
                    help="build directory of the runtime (lib/libhector_runtime.so)")
    ap.add_argument("--json", type=pathlib.Path)
    ap.add_argument("--parallel", type=int, default=4, help="packages built at once")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per benchmark")
    ap.add_argument("--select",
                    help="comma-separated name prefixes of the packages to build and run "
                         "(default: all but the user-* ones; user-models: every layer of the "
                         "user models, CUDA against the CPU on the awkward graphs)")
    args = ap.parse_args()
    global PACKAGES
    PACKAGES = args.packages
    os.environ.setdefault("HECTOR_BUILD_DIR", str(args.runtime))

    import torch
    cuda = torch.cuda.is_available()
    jobs = max(1, (os.cpu_count() or 2) // args.parallel)
    def selected(name):
        if args.select:
            return name.startswith(tuple(args.select.split(",")))
        return not name.startswith("user-")
    pkgs = sorted(p for p in args.packages.iterdir()
                  if (p / "manifest.json").is_file() and selected(p.name))
    if not pkgs:
        sys.exit(f"no {args.select or ''} packages in {args.packages}: run "
                 "tools/gpu-check-prepare.sh first")
    libs, report = {}, {"device": torch.cuda.get_device_name() if cuda else "cpu",
                        "builds": {}, "checks": [], "bench": []}
    with concurrent.futures.ThreadPoolExecutor(args.parallel) as pool:
        for name, lib, secs, log in pool.map(lambda p: build_package(p, args.runtime, cuda, jobs),
                                             pkgs):
            report["builds"][name] = {"ok": lib is not None, "seconds": round(secs, 1)}
            print(f"build {name}: {'ok' if lib else 'FAILED'} ({secs:.0f} s)", flush=True)
            if lib is None:
                print(log)
            else:
                libs[name] = lib

    import hector
    from references import awkward_graph
    failures = sum(1 for b in report["builds"].values() if not b["ok"])

    def graphs(real=True):
        for kw in (dict(seed=0), dict(seed=1, num_relations=1), dict(seed=2, num_nodes=9)):
            yield f"awkward{kw}", awkward_graph(**kw)
        for name in ("aifb", "umls") if real else ():
            g = real_graph(name)
            if g is not None:
                yield name, g

    def make_graph(g, device):
        return hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                            num_relations=g.num_relations, num_ntypes=g.num_ntypes).to(device)

    def inputs_for(manifest, g, dtype):
        from references import rgcn_norm
        out = []
        for i in manifest["inputs"]:
            if i["space"] == "node":
                out.append(torch.randn(g.num_nodes, *i["dims"], dtype=dtype))
            elif i["dims"]:
                out.append(torch.randn(g.src.numel(), *i["dims"], dtype=dtype))
            else:
                out.append(rgcn_norm(g).to(dtype))
        return out

    def as_tuple(out):
        return out if isinstance(out, tuple) else (out,)

    # "tf32": float32 with torch.backends.cuda.matmul.allow_tf32 set for the CUDA call, whose
    # GEMMs then round their operands to TF32 (11 significant bits, 2^-11 relative): 16 times
    # that, of the largest output, against the float32 CPU result.
    # "bfloat16", "float16": the CUDA call against the CPU call in the same 16-bit dtype, both
    # in the layer's storage (16-bit rows with float sums for a layer in 16-bit storage, whose
    # CUDA GEMMs run on 16-bit tensor cores; float32 conversions otherwise). Each is within
    # 2^-7 (bfloat16) or 2^-10 (float16) of its largest magnitude from the exact result
    # (test_precision.py's bound), so the two differ by at most twice that; gradients, which
    # round more intermediates, by twice that again.
    tol = {"float64": 1e-10, "float32": 1e-5, "tf32": 16 * 2.0 ** -11,
           "bfloat16": 2.0 ** -6, "float16": 2.0 ** -9}
    grad_tol = {mode: (2 if mode in ("bfloat16", "float16") else 10) * t
                for mode, t in tol.items()}
    dtypes = {"float64": torch.float64, "float32": torch.float32, "tf32": torch.float32,
              "bfloat16": torch.bfloat16, "float16": torch.float16}
    modes = (("float64", "float32", "tf32", "bfloat16", "float16") if cuda
             else ("float64", "float32", "bfloat16", "float16"))
    checked = []   # (package, layer name, module class, whether to run on the real graphs)
    for name, lib in sorted(libs.items()):
        if name.startswith("check-"):
            checked.append((name, name, hector.load(lib), True))
        elif name.startswith("user-"):
            checked += [(name, f"{name}:{layer}", Layer, False)
                        for layer, Layer in sorted(hector.load_all(lib).items())]
    for package, name, Layer, real in checked:
        for variant, (gname, g) in ((v, gg) for v in Layer.variants() for gg in graphs(real)):
            # Every optimisation variant the library carries, on CPU and CUDA alike.
            for mode in modes:
                dtype = dtypes[mode]
                torch.manual_seed(0)
                layer = Layer(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=dtype)
                layer.variant = variant
                with torch.no_grad():
                    for p in layer.parameters():
                        if p.abs().sum() == 0 or (p == 1).all():
                            p.normal_()
                xs = [x.requires_grad_() for x in inputs_for(Layer.manifest, g, dtype)]
                cpu = as_tuple(layer(make_graph(g, "cpu"), *xs))
                up = [torch.randn_like(o) for o in cpu]
                # Gradients of every input and weight through the compiled backward.
                grads_cpu = torch.autograd.grad(cpu, xs + list(layer.parameters()), up,
                                                allow_unused=True)
                entry = {"model": name, "variant": variant, "graph": gname,
                         "dtype": str(dtype) + (" tf32" if mode == "tf32" else "")}
                if cuda:
                    dev = layer.to("cuda")
                    xs_cuda = [x.detach().cuda().requires_grad_() for x in xs]
                    torch.backends.cuda.matmul.allow_tf32 = mode == "tf32"
                    try:
                        out = as_tuple(dev(make_graph(g, "cuda"), *xs_cuda))
                        grads_cuda = torch.autograd.grad(out, xs_cuda + list(dev.parameters()),
                                                         [u.cuda() for u in up],
                                                         allow_unused=True)
                    finally:
                        torch.backends.cuda.matmul.allow_tf32 = False
                    out = [o.detach().cpu() for o in out]
                    layer.to("cpu")

                    def rel(a, b):
                        if not b.numel():
                            return 0.0
                        a, b = a.double(), b.double()
                        return ((a - b).abs().max() / b.abs().max().clamp_min(1e-30)).item()

                    err = max(rel(a, b.detach()) for a, b in zip(out, cpu))
                    gerr = max((rel(a.cpu(), b) for a, b in zip(grads_cuda, grads_cpu)
                                if b is not None and b.numel()), default=0.0)
                    entry["cuda_vs_cpu_rel_err"] = err
                    entry["cuda_vs_cpu_grad_rel_err"] = gerr
                    entry["ok"] = (bool(err < tol[mode]) and bool(gerr < grad_tol[mode])
                                   and all(bool(torch.isfinite(o).all()) for o in out))
                else:
                    entry["ok"] = all(bool(torch.isfinite(o).all()) for o in cpu) and all(
                        bool(torch.isfinite(t).all()) for t in grads_cpu if t is not None)
                failures += 0 if entry["ok"] else 1
                report["checks"].append(entry)
                print(json.dumps(entry), flush=True)
        if cuda and name == package:
            failures += pyg_on_gpu(name, Layer, report)

    for name, lib in sorted(libs.items()):
        if name.startswith("bench-") and real_graph("aifb") is not None:
            report["bench"].append(bench(name, hector.load(lib), args.repeat, cuda))
            print(json.dumps(report["bench"][-1]), flush=True)

    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(f"{failures} failures")
    sys.exit(1 if failures else 0)


def pyg_on_gpu(name, Layer, report):
    """Ours on CUDA against PyG's layer on CUDA (same weights), float64, AIFB-free small graph."""
    import torch
    import hector
    from references import awkward_graph, hgt_pyg, rgat_pyg, rgcn_norm, rgcn_pyg
    g = awkward_graph(0)
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                         num_relations=g.num_relations, num_ntypes=g.num_ntypes).to("cuda")
    torch.manual_seed(1)
    layer = Layer(num_relations=g.num_relations, num_ntypes=g.num_ntypes, dtype=torch.float64)
    x = torch.randn(g.num_nodes, Layer.manifest["inputs"][0]["dims"][0], dtype=torch.float64)
    ei = torch.stack([g.src, g.dst]).cuda()
    model = name.removeprefix("check-")
    if model == "rgcn":
        conv, _ = rgcn_pyg(g, x, layer.W.detach(), layer.root.detach(), layer.bias.detach())
        expected = conv.cuda()(x.cuda(), ei, g.etype.cuda())
        ours = layer.cuda()(graph, x.cuda(), rgcn_norm(g).cuda())
    elif model == "rgat_pyg":
        R = g.num_relations
        H = Layer.manifest["params"]["H"]
        W = layer.W.detach().view(R, x.shape[1], H, -1)
        conv, _ = rgat_pyg(g, x, W, layer.q.detach(), layer.k.detach(), layer.bias.detach())
        expected = conv.cuda()(x.cuda(), ei, g.etype.cuda())
        ours = layer.cuda()(graph, x.cuda())
    elif model == "hgt":
        expected, mask = hgt_pyg(g, x, layer, heads=Layer.manifest["params"]["H"])
        ours = layer.cuda()(graph, x.cuda()).cpu()[mask]
        expected = expected[mask]
    else:
        return 0
    err = ((ours.cpu() - expected.cpu()).abs().max() / expected.abs().max()).item()
    entry = {"model": name, "graph": "awkward, vs PyG", "cuda_vs_pyg_rel_err": err,
             "ok": err < 1e-10}
    report["checks"].append(entry)
    print(json.dumps(entry), flush=True)
    return 0 if entry["ok"] else 1


def bench(name, Layer, repeat, cuda):
    """Inference time and peak memory, ours vs PyG, on AIFB (in = out = 64, 1 head), float32."""
    import torch
    import hector
    from references import hgt_pyg, rgat_pyg, rgcn_norm, rgcn_pyg
    dev = "cuda" if cuda else "cpu"
    g = real_graph("aifb")
    graph = hector.Graph(g.src, g.dst, g.etype, num_nodes=g.num_nodes, ntype=g.ntype,
                         num_relations=g.num_relations, num_ntypes=g.num_ntypes).to(dev)
    layer = Layer(num_relations=g.num_relations, num_ntypes=g.num_ntypes).to(dev)
    x = torch.randn(g.num_nodes, 64)
    model = name.removeprefix("bench-")
    ei, et = torch.stack([g.src, g.dst]), g.etype
    if model == "rgcn":
        conv, _ = rgcn_pyg(g, x, layer.W.detach().cpu(), layer.root.detach().cpu(),
                           layer.bias.detach().cpu())
        ours_args, pyg = (graph, x.to(dev), rgcn_norm(g).float().to(dev)), conv.to(dev)
        pyg_args = (x.to(dev), ei.to(dev), et.to(dev))
    elif model == "rgat_pyg":
        R = g.num_relations
        conv, _ = rgat_pyg(g, x, layer.W.detach().cpu().view(R, 64, 1, 64), layer.q.detach().cpu(),
                           layer.k.detach().cpu(), layer.bias.detach().cpu())
        ours_args, pyg = (graph, x.to(dev)), conv.to(dev)
        pyg_args = (x.to(dev), ei.to(dev), et.to(dev))
    else:
        cpu_layer = type(layer)(num_relations=g.num_relations, num_ntypes=g.num_ntypes)
        cpu_layer.load_state_dict({k: v.cpu() for k, v in layer.state_dict().items()})
        _, _, conv, x_dict, ei_dict = hgt_pyg(g, x, cpu_layer, heads=1, return_module=True)
        ours_args, pyg = (graph, x.to(dev)), conv.to(dev)
        pyg_args = ({k: v.to(dev) for k, v in x_dict.items()},
                    {k: v.to(dev) for k, v in ei_dict.items()})
    def timed(fn, *a):
        with torch.no_grad():
            fn(*a)
            if cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated() if cuda else 0
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn(*a)
            if cuda:
                torch.cuda.synchronize()
            secs = (time.perf_counter() - t0) / repeat
            peak = (torch.cuda.max_memory_allocated() - base) if cuda else 0
        return secs, peak
    ours_t, ours_m = timed(layer, *ours_args)
    entry = {"model": name, "graph": "aifb", "device": dev, "ours_ms": ours_t * 1e3,
             "ours_peak_bytes": ours_m}
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            entry["ours_tf32_ms"] = timed(layer, *ours_args)[0] * 1e3
        finally:
            torch.backends.cuda.matmul.allow_tf32 = False
    # bfloat16 weights and features (16-bit storage for RGCN: on CUDA tensor-core GEMMs on 16-bit
    # rows; float32 conversions for the softmax layers).
    layer.to(torch.bfloat16)
    half_args = [a.to(torch.bfloat16) if torch.is_tensor(a) and a.is_floating_point() else a
                 for a in ours_args]
    entry["ours_bf16_ms"] = timed(layer, *half_args)[0] * 1e3
    layer.to(torch.float32)
    pyg_t, pyg_m = timed(pyg, *pyg_args)
    entry.update(pyg_ms=pyg_t * 1e3, pyg_peak_bytes=pyg_m, speedup=pyg_t / ours_t,
                 memory_ratio=(pyg_m / ours_m) if ours_m else None)
    return entry


if __name__ == "__main__":
    main()
