"""The weights of a built model: constants moved off their init value, and the cast to the command's dtype."""

from __future__ import annotations

# How far a constant-initialised parameter moves: a constant c != 0 (norm gammas) becomes c * exp(N(0, 0.5)) —
# positive, mostly 0.6c to 1.6c, different per channel and per site, as trained gammas are; zeros become
# N(0, 0.5). Smaller spreads hide a dropped gamma on tiny models (measured: 0.2 left Flux's output within bf16
# tolerance with every q/k gamma dropped).
PERTURB_STD = 0.5


def perturb_constant_parameters(module, seed: int) -> tuple[str, ...]:
    import torch

    gen = torch.Generator().manual_seed(seed + 1)
    moved = []
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if not parameter.is_floating_point() or parameter.numel() < 2:
                continue
            first = parameter.reshape(-1)[0]
            if not bool((parameter == first).all()):
                continue
            noise = torch.randn(parameter.shape, generator=gen, dtype=torch.float32) * PERTURB_STD
            if float(first) == 0.0:
                parameter.copy_(noise.to(parameter.dtype))
            else:
                parameter.mul_(noise.exp().to(parameter.dtype))
            moved.append(name)
    return tuple(moved)


def cast_module(module, dtype) -> tuple[str, ...]:
    """Cast floating parameters and buffers to `dtype`, leaving `_keep_in_fp32_modules` ones as built."""
    keep = tuple(getattr(module, "_keep_in_fp32_modules", None) or ())
    kept = []
    for owner_name, owner in module.named_modules():
        for is_buffer, registry in ((False, owner._parameters), (True, owner._buffers)):
            for attr, tensor in list(registry.items()):
                if tensor is None or not tensor.is_floating_point():
                    continue
                full = f"{owner_name}.{attr}" if owner_name else attr
                if keep and any(part in keep for part in full.split(".")):
                    kept.append(full)
                    continue
                if tensor.dtype == dtype:
                    continue
                # As nn.Module.to(): parameters keep their identity, buffers are replaced (a buffer may be a
                # view, whose base would keep the old dtype if only .data were swapped)
                if is_buffer:
                    registry[attr] = tensor.to(dtype)
                else:
                    tensor.data = tensor.data.to(dtype)
    return tuple(kept)
