"""Cost of building a zoo model: `build_model(name, "bf16")` against the floor of constructing the same diffusers
class from the same config in fp32 (`cls(**config)`), which any tiny-model tool pays.

Target: over the whole zoo, total build / total floor <= 2 (the extra is the seeded init, the bf16 cast and the
example inputs). Per model the costs are milliseconds, so those ratios are printed for reading, not gated. Both are
timed in this one run, model by model, best of N, so machine noise hits both.
"""

from __future__ import annotations

import sys
import time

RUNS = 10
TARGET = 2.0


def best_of(fn) -> float:
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    import diffusers

    from sdcompile.core.zoo.models import build_model, quiet_model_warnings, zoo_entries

    floors, builds = [], []
    for name, entry in zoo_entries().items():
        cls = getattr(diffusers, entry.class_name)

        def construct(cls=cls, config=entry.config):
            with quiet_model_warnings():
                cls(**config)

        build_model(name, "bf16")  # warm imports and caches once
        floor, build = best_of(construct), best_of(lambda name=name: build_model(name, "bf16"))
        floors.append(floor)
        builds.append(build)
        print(f"zoo_build: {name:<14} diffusers {floor * 1000:7.1f} ms | build_model {build * 1000:7.1f} ms "
              f"| ratio {build / floor:.2f}")
    ratio = sum(builds) / sum(floors)
    print(f"zoo_build: all {len(builds)} models {sum(builds) * 1000:.0f} ms vs diffusers {sum(floors) * 1000:.0f} ms "
          f"= {ratio:.2f} (target <= {TARGET}) {'OK' if ratio <= TARGET else 'OVER'}")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
