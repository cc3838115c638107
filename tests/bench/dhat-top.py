"""The allocation sites alive at the heap's peak in a dhat profile (valgrind --tool=dhat), largest
first: bytes, blocks, bytes per stream, and the first frames that name the gateway's or its
libraries' code (the allocator's own frames left out).

    python3 dhat-top.py dhat.json STREAMS [ROWS]
"""
import json
import re
import sys

profile = json.load(open(sys.argv[1]))
streams = int(sys.argv[2])
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 15
frames = profile["ftbl"]
skip = re.compile(r"^(UnknownInlinedFun|alloc::|core::|std::|__rust|<alloc|<core|malloc|calloc|realloc|memalign|posix_memalign|0x|\[root\])")
# The allocator's own inlined frames, named without their path.
internal = {"alloc", "alloc_impl", "alloc_impl_runtime", "allocate", "allocate_in", "try_allocate_in",
            "with_capacity", "with_capacity_in", "exchange_malloc", "box_new", "new_uninit_in", "try_new_uninit_in",
            "grow_amortized", "grow_one", "finish_grow", "reserve", "do_reserve_and_handle", "reserve_for_push",
            "try_reserve", "realloc", "grow", "grow_impl"}
sites = sorted(profile["pps"], key=lambda p: -p.get("gb", 0))
total = sum(p.get("gb", 0) for p in sites)
print(f"heap at its peak: {total} bytes, {total / streams:.0f} per stream ({streams} streams)")
for site in sites[:rows]:
    names = []
    for index in site["fs"]:
        name = re.sub(r"\s*\(.*\)$", "", frames[index].split(": ", 1)[-1]).strip()
        if not skip.match(name) and name.split("<", 1)[0] not in internal:
            names.append(name[:140])
    gb, blocks = site.get("gb", 0), site.get("gbk", 0)
    print(f"{gb:>10} bytes {blocks:>6} blocks {gb / streams:>8.0f} per stream")
    for name in names[:4]:
        print(f"      {name}")
