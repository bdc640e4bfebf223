#!/usr/bin/env python3
"""bench/machine.py - the one description of the machine a benchmark ran
on, for the headers of bench/RESULTS.md: the CPUs, the model name, the
vendor's family, model and stepping (a name such as "AMD EPYC" does not
tell a Zen 3 from a Zen 4; family 25 model 1 is Zen 3, model 17 Zen 4),
the instruction sets emb's kernel tables are chosen by (present ones
listed, and "no AVX-512" or "no AMX" said outright), and whether it runs
under a hypervisor.  From /proc/cpuinfo; "?" where a field is missing.

  python3 bench/machine.py      prints the line
  import machine; machine.describe()   (bench/ on sys.path)

Example: "2 CPUs, AMD EPYC (AuthenticAMD family 25 model 1 stepping 1;
avx2 fma f16c; no AVX-512; no AMX; under a hypervisor)".
"""
import os

# the flags the kernel tables and their tests look at (lib/base/cpu.c)
FLAGS = ("avx2", "fma", "f16c", "avx_vnni", "avx512f", "avx512bw",
         "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16",
         "avx512_vpopcntdq", "amx_tile", "amx_bf16", "amx_int8")


def cpuinfo(path="/proc/cpuinfo"):
    """the fields of the first processor in PATH ({} when unreadable)"""
    fields = {}
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    break
                k, _, v = line.partition(":")
                fields[k.strip()] = v.strip()
    except OSError:
        pass
    return fields


def describe(path="/proc/cpuinfo"):
    c = cpuinfo(path)
    flags = c.get("flags", "").split()
    isa = " ".join(f for f in FLAGS if f in flags)
    parts = [isa or "none of " + " ".join(FLAGS[:3])]
    if "avx512f" not in flags:
        parts.append("no AVX-512")
    if "amx_tile" not in flags:
        parts.append("no AMX")
    if "hypervisor" in flags:
        parts.append("under a hypervisor")
    return "%d CPUs, %s (%s family %s model %s stepping %s; %s)" % (
        os.cpu_count() or 0, c.get("model name", "?"),
        c.get("vendor_id", "?"), c.get("cpu family", "?"),
        c.get("model", "?"), c.get("stepping", "?"), "; ".join(parts))


if __name__ == "__main__":
    print(describe())
