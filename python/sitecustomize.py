# sightline's start-up hook for `sightline profile --pytorch[=shapes]`.
#
# `sightline profile` puts this file's directory first on PYTHONPATH of the
# profiled process only, with SIGHTLINE_PYTORCH=ops|shapes. Python imports
# `sitecustomize` at start-up; this one
#   1. runs the next `sitecustomize` on sys.path (the one it shadows), if any;
#   2. waits for `torch` to be imported (a meta-path hook: importing torch
#      here would slow every Python process of the run and could change the
#      program), then enters torch.autograd.profiler.emit_nvtx(record_shapes=...)
#      for the life of the process: every ATen op becomes an NVTX range
#      ("aten::mm, seq = 12[, sizes = ...]"), which the collector records and
#      the analyzer projects onto kernels through the launch's correlation id.
#   3. registers an optimizer step post-hook (torch >= 2.0) that marks, after
#      every optimizer step, what the caching allocator holds: an NVTX marker
#      "sightline.torch_memory device=D allocated=A max_allocated=M reserved=R
#      opt=K" (K: which optimizer, 0 for the first that stepped), the values
#      torch.cuda.memory_allocated / max_memory_allocated / memory_reserved
#      return, read in one call of torch._C._cuda_memoryStats (the three
#      public functions where torch lacks it), so the analyzer can put the
#      tensors' bytes next to the reserved bytes the allocation records show.
#      Without torch.optim (not a full torch) it does nothing; a torch.optim
#      without the hook API (torch < 2.0) costs one warning. Under the monitor
#      each device's allocator is read at most every 0.25 s; the other steps
#      of the first optimizer get the marker without the byte counts
#      ("sightline.torch_memory device=D opt=0").
# SIGHTLINE_PYTORCH=memory (what `sightline monitor` sets for Python commands)
# does 3. only: no op ranges, one marker per optimizer step, which the monitor
# serves as sightline_pytorch_memory_*_bytes.
# It never raises: without torch, or with an API it does not know, it prints
# one warning on stderr and the program runs unchanged.
import os
import sys


def _sightline_warn(message):
    try:
        who = ("monitor: PyTorch hook" if os.environ.get("SIGHTLINE_PYTORCH") == "memory"
               else "--pytorch")
        sys.stderr.write("sightline: %s: %s\n" % (who, message))
    except Exception:
        pass


def _sightline_chain_sitecustomize():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        import importlib.machinery
        import importlib.util

        path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.origin is None or spec.loader is None:
            return
        if os.path.abspath(spec.origin) == os.path.abspath(__file__):
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as e:  # the shadowed hook's own failure: report, go on
        _sightline_warn("the other sitecustomize on sys.path failed: %r" % (e,))


_sightline_state = {"profiler": None, "done": False, "memory_hook": None}


def _sightline_enable_memory_samples():
    # Extra to the op ranges: nothing happens without torch.optim, one
    # warning when it lacks the step hook API.
    try:
        import importlib

        import torch

        # torch's own import does not load torch.optim (it is imported by
        # the program later, or lazily): load it here, once torch is ready.
        try:
            optimizer = importlib.import_module("torch.optim.optimizer")
        except Exception:
            return  # not a full torch (no torch.optim): nothing to sample
        register = getattr(optimizer, "register_optimizer_step_post_hook", None)
        cuda = getattr(torch, "cuda", None)
        if register is None or cuda is None or getattr(cuda, "nvtx", None) is None:
            _sightline_warn("this torch has no optimizer step hooks or torch.cuda.nvtx; "
                            "no PyTorch allocator samples")
            return
        failed = []
        # Which optimizer stepped, by order of first step (opt=0 the first):
        # a program with several (a GAN, sparse + dense) steps each once per
        # iteration, and only the first one's marks are step boundaries for
        # the monitor. Weak keys: the program's optimizers are not kept alive.
        import weakref

        ordinals = weakref.WeakKeyDictionary()
        by_id = {}

        def _ordinal(opt):
            try:
                n = ordinals.get(opt)
                if n is None:
                    n = ordinals[opt] = len(ordinals) + len(by_id)
                return n
            except TypeError:  # not weak-referenceable
                return by_id.setdefault(id(opt), len(ordinals) + len(by_id))

        # One read of the allocator's nested statistics (what
        # torch.cuda.memory_allocated / max_memory_allocated / memory_reserved
        # each rebuild and flatten in full: three of them cost a monitored
        # step tens of microseconds); the public functions where torch lacks
        # it or its layout differs.
        raw_stats = getattr(getattr(torch, "_C", None), "_cuda_memoryStats", None)

        def _read(d):
            if raw_stats is not None and not failed_raw:
                try:
                    s = raw_stats(d)
                    a, r = s["allocated_bytes"]["all"], s["reserved_bytes"]["all"]
                    return int(a["current"]), int(a["peak"]), int(r["current"])
                except Exception:
                    failed_raw.append(True)
            return (cuda.memory_allocated(d), cuda.max_memory_allocated(d),
                    cuda.memory_reserved(d))

        failed_raw = []
        # The monitor (SIGHTLINE_PYTORCH=memory) serves gauges refreshed every
        # second or so: the allocator is read at most every 0.25 s there, and
        # the steps in between get a marker without it (still a step boundary
        # for the monitor). `sightline profile --pytorch` reads it every step.
        every_s = 0.25 if os.environ.get("SIGHTLINE_PYTORCH") == "memory" else 0.0
        last_read = {}  # device → time of its last read (one clock per device)
        import time

        def _sample(opt, args, kwargs):
            try:
                if failed or not cuda.is_initialized():
                    return
                d = cuda.current_device()
                n = _ordinal(opt)
                now = time.monotonic()
                before = last_read.get(d)
                if before is not None and now - before < every_s:
                    if n == 0:
                        cuda.nvtx.mark("sightline.torch_memory device=%d opt=0" % d)
                    return
                last_read[d] = now
                cuda.nvtx.mark("sightline.torch_memory device=%d allocated=%d max_allocated=%d "
                               "reserved=%d opt=%d" % ((d,) + _read(d) + (n,)))
            except Exception as e:
                if not failed:
                    failed.append(e)
                    _sightline_warn("PyTorch allocator sample failed (%r); no more tried" % (e,))

        hook = _sample
        if os.environ.get("SIGHTLINE_SELF_COST") == "1":
            # SIGHTLINE_SELF_COST=1: this hook's own time, as the collector
            # times its parts (lib/collect/self_cost.h), printed at exit in
            # the same line format.
            times = []
            clock = time.perf_counter_ns

            def hook(opt, args, kwargs):
                t0 = clock()
                _sample(opt, args, kwargs)
                times.append(clock() - t0)

            def _report():
                if not times:
                    return
                v = sorted(times)
                sys.stderr.write(
                    "sightline: self-cost [pid %d] python memory hook: %d calls, mean %.3f us, "
                    "p50 %.3f us, p99 %.3f us, max %.1f us, total %.3f ms\n"
                    % (os.getpid(), len(v), sum(v) / len(v) / 1e3, v[len(v) // 2] / 1e3,
                       v[min(len(v) - 1, len(v) * 99 // 100)] / 1e3, v[-1] / 1e3, sum(v) / 1e6))

            import atexit

            atexit.register(_report)
        _sightline_state["memory_hook"] = register(hook)
    except Exception:
        pass


def _sightline_enable_ops():
    if _sightline_state["done"]:
        return
    _sightline_state["done"] = True
    _sightline_enable_memory_samples()
    mode = os.environ.get("SIGHTLINE_PYTORCH", "ops")
    if mode == "memory":
        return
    try:
        import torch.autograd.profiler as profiler

        emit_nvtx = getattr(profiler, "emit_nvtx", None)
        if emit_nvtx is None:
            _sightline_warn("this torch has no torch.autograd.profiler.emit_nvtx; no op ranges")
            return
        p = emit_nvtx(record_shapes=(mode == "shapes"))
        p.__enter__()
        _sightline_state["profiler"] = p  # kept alive; never exited
    except Exception as e:
        _sightline_warn("could not enable op ranges (%r); the program runs without them" % (e,))


class _SightlineTorchFinder(object):
    """Meta-path finder that runs _sightline_enable_ops once torch is imported."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or _sightline_state["done"]:
            return None
        try:
            import importlib.machinery

            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
            loader = spec.loader
            exec_module = getattr(loader, "exec_module", None)
            if exec_module is None:
                return None

            def _exec(module, _exec_module=exec_module):
                _exec_module(module)
                _sightline_enable_ops()

            # Wrap this loader instance only; everything else is untouched.
            try:
                loader.exec_module = _exec
            except Exception:
                return None
            return spec
        except Exception as e:
            _sightline_warn("import hook failed (%r); no op ranges" % (e,))
            return None


def _sightline_install():
    if os.environ.get("SIGHTLINE_PYTORCH", "") in ("", "off"):
        return
    if "torch" in sys.modules:
        _sightline_enable_ops()
    else:
        sys.meta_path.insert(0, _SightlineTorchFinder())


_sightline_chain_sitecustomize()
try:
    _sightline_install()
except Exception as _e:
    _sightline_warn("start-up hook failed (%r)" % (_e,))
