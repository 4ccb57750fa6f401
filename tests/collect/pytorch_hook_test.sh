#!/usr/bin/env bash
# The --pytorch start-up hook (python/sitecustomize.py) on the CPU, with a
# fake `torch` package: op ranges are enabled once torch is imported (not
# before), record_shapes follows SIGHTLINE_PYTORCH, a shadowed sitecustomize
# still runs, and a torch without emit_nvtx (or one whose emit_nvtx raises)
# costs one warning and nothing else. Usage: pytorch_hook_test.sh SRC_DIR
set -euo pipefail
SRC=${1:?usage: pytorch_hook_test.sh SRC_DIR}
PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "skipped: no python3"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p "$T/good/torch/autograd" "$T/bad/torch/autograd" "$T/raising/torch/autograd" "$T/other"
for v in good bad raising; do
  : > "$T/$v/torch/__init__.py"
  printf 'import torch.autograd.profiler\n' > "$T/$v/torch/autograd/__init__.py"
done
cat > "$T/good/torch/autograd/profiler.py" <<'PY'
import sys
class emit_nvtx:
    def __init__(self, enabled=True, record_shapes=False):
        self.record_shapes = record_shapes
    def __enter__(self):
        sys.stdout.write("emit_nvtx entered record_shapes=%s\n" % self.record_shapes)
        return self
PY
: > "$T/bad/torch/autograd/profiler.py"
cat > "$T/raising/torch/autograd/profiler.py" <<'PY'
class emit_nvtx:
    def __init__(self, **kw):
        raise RuntimeError("API changed")
PY
printf 'import sys\nsys.stdout.write("other sitecustomize ran\\n")\n' > "$T/other/sitecustomize.py"
HOOK="$SRC/python"
fail() { echo "FAIL: $*"; exit 1; }

# Ops mode: enabled right after `import torch`, not before; the shadowed hook ran.
out=$(PYTHONPATH="$HOOK:$T/other:$T/good" SIGHTLINE_PYTORCH=ops "$PY" -c '
import sys
print("before import")
import torch
print("after import")' 2>&1)
echo "$out"
expected=$'other sitecustomize ran\nbefore import\nemit_nvtx entered record_shapes=False\nafter import'
[ "$out" = "$expected" ] || fail "ops mode output"

out=$(PYTHONPATH="$HOOK:$T/good" SIGHTLINE_PYTORCH=shapes "$PY" -c 'import torch' 2>&1)
[ "$out" = "emit_nvtx entered record_shapes=True" ] || fail "shapes mode: $out"

# No torch imported: nothing printed, nothing imported.
out=$(PYTHONPATH="$HOOK:$T/good" SIGHTLINE_PYTORCH=ops "$PY" -c 'import sys; print("torch" in sys.modules)' 2>&1)
[ "$out" = "False" ] || fail "torch imported eagerly: $out"

# A torch without emit_nvtx, and one whose emit_nvtx raises: one warning, exit 0.
out=$(PYTHONPATH="$HOOK:$T/bad" SIGHTLINE_PYTORCH=ops "$PY" -c 'import torch; import torch; print("ran")' 2>&1)
echo "$out"
[ "$(grep -c 'sightline: --pytorch' <<<"$out")" = 1 ] && grep -q '^ran$' <<<"$out" || fail "no emit_nvtx"
out=$(PYTHONPATH="$HOOK:$T/raising" SIGHTLINE_PYTORCH=ops "$PY" -c 'import torch; print("ran")' 2>&1)
echo "$out"
[ "$(grep -c 'sightline: --pytorch' <<<"$out")" = 1 ] && grep -q '^ran$' <<<"$out" || fail "raising emit_nvtx"

# Off: the hook does nothing at all.
out=$(PYTHONPATH="$HOOK:$T/good" SIGHTLINE_PYTORCH=off "$PY" -c 'import torch; print("ran")' 2>&1)
[ "$out" = "ran" ] || fail "off mode: $out"

# A torch with an optimizer step post-hook API: after each optimizer step the
# hook marks what the caching allocator holds (one NVTX marker), and nothing
# else changes; a failing sample is swallowed.
mkdir -p "$T/mem/torch/autograd" "$T/mem/torch/optim"
cp "$T/good/torch/autograd/profiler.py" "$T/mem/torch/autograd/profiler.py"
printf 'import torch.autograd.profiler\n' > "$T/mem/torch/autograd/__init__.py"
cat > "$T/mem/torch/__init__.py" <<'PY'
import sys, types
hooks = []
def _mark(msg):
    sys.stdout.write("mark %s\n" % msg)
cuda = types.SimpleNamespace(is_initialized=lambda: True, current_device=lambda: 1,
                             memory_allocated=lambda d: 5, max_memory_allocated=lambda d: 7,
                             memory_reserved=lambda d: 8, nvtx=types.SimpleNamespace(mark=_mark))
PY
# torch.optim is a subpackage that torch's own import does not load: the
# hook imports it.
: > "$T/mem/torch/optim/__init__.py"
cat > "$T/mem/torch/optim/optimizer.py" <<'PY'
import torch
def register_optimizer_step_post_hook(h):
    torch.hooks.append(h)
PY
out=$(PYTHONPATH="$HOOK:$T/mem" SIGHTLINE_PYTORCH=ops "$PY" -c '
import torch
torch.hooks[0](None, (), {})
torch.cuda.memory_allocated = None  # a sample that fails: one warning, nothing raised
torch.hooks[0](None, (), {})
torch.hooks[0](None, (), {})
print("ran")' 2>&1)
echo "$out"
[ "$(grep -c '^mark sightline.torch_memory device=1 allocated=5 max_allocated=7 reserved=8 opt=0$' <<<"$out")" = 1 ] ||
  fail "memory samples: $out"
[ "$(grep -c 'sightline: --pytorch: PyTorch allocator sample failed' <<<"$out")" = 1 ] ||
  fail "one warning for failing samples: $out"
grep -q '^ran$' <<<"$out" || fail "memory samples: program did not finish: $out"

# Memory mode (what `sightline monitor` sets for Python commands): the
# allocator marker after each optimizer step, no op ranges.
# Two optimizers (a GAN, sparse + dense): each numbered by its first step.
# The allocator is read at most every 0.25 s there; the first optimizer's
# steps in between get a marker without byte counts (a step boundary), a
# second optimizer's get none.
out=$(PYTHONPATH="$HOOK:$T/mem" SIGHTLINE_PYTORCH=memory "$PY" -c '
import time, torch
class Opt: pass
g, d = Opt(), Opt()
torch.hooks[0](g, (), {}); torch.hooks[0](d, (), {}); torch.hooks[0](g, (), {})
time.sleep(0.3)
torch.hooks[0](d, (), {}); torch.hooks[0](g, (), {})
print("ran")' 2>&1)
echo "$out"
m='mark sightline.torch_memory device=1 allocated=5 max_allocated=7 reserved=8'
[ "$out" = "$m opt=0"$'\n'"mark sightline.torch_memory device=1 opt=0"$'\n'"$m opt=1"$'\n'"mark sightline.torch_memory device=1 opt=0"$'\nran' ] ||
  fail "memory mode: $out"
# Each device has its own clock: a process stepping on device 1 and then on
# device 2 (or two optimizers on two devices) reads both allocators.
out=$(PYTHONPATH="$HOOK:$T/mem" SIGHTLINE_PYTORCH=memory "$PY" -c '
import torch
torch.hooks[0](None, (), {})
torch.cuda.current_device = lambda: 2
torch.hooks[0](None, (), {}); torch.hooks[0](None, (), {})
print("ran")' 2>&1)
echo "$out"
m2='mark sightline.torch_memory device=2 allocated=5 max_allocated=7 reserved=8'
[ "$out" = "$m opt=0"$'\n'"$m2 opt=0"$'\n'"mark sightline.torch_memory device=2 opt=0"$'\nran' ] ||
  fail "memory mode, two devices: $out"
# One read of torch._C._cuda_memoryStats (the nested statistics the public
# functions each rebuild) where torch has it; the public functions where its
# layout is not the expected one.
mkdir -p "$T/raw"
cp -r "$T/mem/torch" "$T/raw/torch"
cat >> "$T/raw/torch/__init__.py" <<'PY'
def _stats(d):
    if _C.layout == "other":
        return {"allocated": 1}
    return {"allocated_bytes": {"all": {"current": 50, "peak": 70}},
            "reserved_bytes": {"all": {"current": 80}}}
_C = types.SimpleNamespace(_cuda_memoryStats=_stats, layout="nested")
PY
out=$(PYTHONPATH="$HOOK:$T/raw" SIGHTLINE_PYTORCH=ops "$PY" -c '
import torch
torch.hooks[0](None, (), {})
torch._C.layout = "other"
torch.hooks[0](None, (), {})
print("ran")' 2>&1)
echo "$out"
[ "$out" = "emit_nvtx entered record_shapes=False"$'\n'"mark sightline.torch_memory device=1 allocated=50 max_allocated=70 reserved=80 opt=0"$'\n'"$m opt=0"$'\nran' ] ||
  fail "raw allocator statistics: $out"
# Memory mode with a torch.optim without the step hook API (torch < 2.0): one
# warning, named for the monitor; no op ranges.
mkdir -p "$T/old/torch/autograd" "$T/old/torch/optim"
cp "$T/mem/torch/__init__.py" "$T/old/torch/__init__.py"
cp "$T/good/torch/autograd/profiler.py" "$T/old/torch/autograd/profiler.py"
printf 'import torch.autograd.profiler\n' > "$T/old/torch/autograd/__init__.py"
: > "$T/old/torch/optim/__init__.py"
: > "$T/old/torch/optim/optimizer.py"
out=$(PYTHONPATH="$HOOK:$T/old" SIGHTLINE_PYTORCH=memory "$PY" -c 'import torch; print("ran")' 2>&1)
echo "$out"
[ "$(grep -c '^sightline: monitor: PyTorch hook: this torch has no optimizer step hooks' <<<"$out")" = 1 ] &&
  grep -q '^ran$' <<<"$out" && ! grep -q 'emit_nvtx entered' <<<"$out" || fail "memory mode, no hook API: $out"
echo "PASS"
