"""Statistics of a tensor from a few raw reductions, computed with torch
operations on the tensor's own device (the hook of trainwatch.torch
concatenates a step's raw vectors and fetches them in one transfer; the
decoders turn each into DEVICE_STATS on the host).

Three ways to one set of statistics, by what the device allows:
_fast_raw (a fixed set of passes, right when every element is finite),
_host_stats (a CPU tensor: its first reductions are read, and only the passes
they leave open follow) and _exact_raw (a tensor known to hold NaN or
infinities: counted, and left out of the moments).
"""

import math

import torch

# Over finite elements; "count" (every element) is known on the host.
DEVICE_STATS = ("zeros", "nan", "pos_inf", "neg_inf", "min", "max", "mean", "abs_mean",
                "variance", "l1", "l2")
# Of a loss, on the host.
LOSS_STATS = ("nan", "pos_inf", "neg_inf", "min", "max", "mean")


# p5 and p95 of a gradient come from at most this many of its elements,
# evenly spaced (a sort of them: about a millisecond on the CPU).
QUANTILE_ELEMENTS = 1 << 16
# A model input of 4 dimensions with at most this many channels is an image:
# its per-channel means go to CheckInputImages.
IMAGE_MAX_CHANNELS = 16


def _to_host(vector):
    """The one device-to-host transfer of a step."""
    return vector.cpu().tolist()


def _as_float(tensor):
    """`tensor` flattened, in the precision its statistics are computed in: its
    own (at least float32; integers in float64). A float64 reduction of a
    float32 tensor costs several times as much, on the CPU about ten."""
    x = tensor.detach().reshape(-1)
    if not x.is_floating_point():
        return x.double()
    if x.dtype in (torch.float16, torch.bfloat16):
        return x.float()
    return x


# The raw reductions of _fast_raw, decoded by _decode_fast.
FAST_RAW = 6          # sum, min, max, l1, nonzero, ||x - mean||
# with count_non_finite, then (+Inf) - (-Inf), (+Inf) + (-Inf), n - NaN + (+Inf) + (-Inf)


def _count_sum(x, n):
    """The NaN-skipping sum of small integers in x, exact: in x's own type up
    to 2^24 elements (float32 counts exactly to there), else in float64."""
    return torch.nansum(x) if n < 2 ** 24 else torch.nansum(x, dtype=torch.float64)


def _fast_raw(x, work, count_non_finite=False):
    """The raw reductions DEVICE_STATS come from, of a flat floating-point
    tensor x with at least one element, as one vector on its device.
    `work` is a tensor like x that the passes that need one write into (the
    hook keeps one on the CPU: a temporary as large as a weight costs more in
    page faults than the pass itself, and its time varies tenfold). One pass
    each: the sum; min and max; |x| into work, its sum (l1), its signs in
    place and their sum (the nonzero elements); x - mean into work and its
    norm.

    They are right when every element is finite, which min and max show (they
    propagate NaN and hold any infinity). Otherwise the caller measures the
    tensor again with _exact_raw, or, for a tensor that is gone by the end of
    the step, asks for the counts of NaN, +Inf and -Inf (count_non_finite:
    x scaled into [-0.5, 0.5] and truncated is 0 where x is finite, +-Inf or
    NaN where not; clamped to [-1, 1], NaN-skipping sums of it, of its
    absolute value, and of that plus one count them: five more passes, no
    mask (comparisons and isnan make masks, several times slower on the CPU))
    and does without the moments."""
    n = x.numel()
    total = x.sum()
    low, high = torch.aminmax(x)
    magnitude = torch.abs(x, out=work)
    floats = [total, low, high, magnitude.sum(), _count_sum(magnitude.sign_(), n),
              torch.linalg.vector_norm(torch.sub(x, total, alpha=1.0 / n, out=work))]
    if count_non_finite:
        edge = torch.mul(x, 0.5 / torch.finfo(x.dtype).max, out=work).trunc_().clamp_(-1, 1)
        floats += [_count_sum(edge, n), _count_sum(edge.abs_(), n), _count_sum(edge.add_(1), n)]
    return _stacked(floats, n)


def _stacked(floats, n):
    """0-dim results as one vector, in their type (torch.cat of the step's
    vectors promotes them all to the widest), or in float64 where _count_sum
    counted in float64."""
    if n < 2 ** 24:
        return torch.stack(floats)
    return torch.stack([f.to(torch.float64) for f in floats])


def _decode_fast(raw, n):
    """(DEVICE_STATS values, every element finite) from _fast_raw's `raw` of a
    tensor of `n` elements. With a non-finite element the moments are NaN (left
    out) and the counts known only when _fast_raw counted them (else NaN)."""
    total, low, high, l1, nonzero, deviation = raw[:FAST_RAW]
    if math.isfinite(low) and math.isfinite(high):
        mean = total / n
        square = deviation * deviation
        return (n - nonzero, 0.0, 0.0, 0.0, low, high, mean, l1 / n, square / n, l1,
                math.sqrt(square + total * total / n)), True
    nan = math.nan
    if len(raw) == FAST_RAW:
        return (nan,) * 11, False
    inf_difference, infinities, shifted = raw[FAST_RAW:]
    nans = n + infinities - shifted
    return (n - nonzero - nans, nans, (infinities + inf_difference) / 2,
            (infinities - inf_difference) / 2) + (nan,) * 7, False


# The variance as mean(x^2) - mean^2 where that is at least this share of
# mean(x^2) (the rounding of mean(x^2) is then at most ten times the
# variance's); below, a second pass around the mean.
ONE_PASS_VARIANCE = 0.1


def _host_stats(x, work):
    """DEVICE_STATS of a flat floating-point CPU tensor with at least one
    element, as host floats. The sum, min and max, and the L2 norm first (three
    passes), read; then only what they leave open: a tensor with a NaN or an
    infinity is measured by _exact_raw; l1 is the sum when no element is
    negative (ReLU outputs); the zeros need counting only when min <= 0 <=
    max; the variance is mean(x^2) - mean^2 unless the mean dominates
    (ONE_PASS_VARIANCE). A weight: seven passes, a ReLU output five (on a
    device: eight, and eight more to count the non-finite elements of an
    activation)."""
    n = x.numel()
    total, low, high, l2 = torch.stack(
        [x.sum(), *torch.aminmax(x), torch.linalg.vector_norm(x)]).tolist()
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(l2)):
        return _decode_exact(_exact_raw(x, work).tolist(), n)
    mean = total / n
    square_mean = l2 * l2 / n
    variance = square_mean - mean * mean
    pending = []  # (name, 0-dim tensor) still to read
    l1 = abs(total)
    if low > 0 or high < 0:
        pass  # no zeros, one sign
    elif low >= 0 or high <= 0:  # one sign, and zeros: the signs' sum counts the others
        pending.append(("signs", _count_sum(torch.sign(x, out=work), n)))
    else:
        magnitude = torch.abs(x, out=work)
        pending.append(("l1", magnitude.sum()))
        pending.append(("nonzero", _count_sum(magnitude.sign_(), n)))
    values = dict(zip([name for name, _ in pending],
                      torch.stack([t for _, t in pending]).tolist() if pending else []))
    if variance < ONE_PASS_VARIANCE * square_mean:
        deviation = torch.linalg.vector_norm(torch.sub(x, total, alpha=1.0 / n, out=work)).item()
        variance = deviation * deviation / n
    nonzero = abs(values["signs"]) if "signs" in values else values.get("nonzero", n)
    l1 = values.get("l1", l1)
    return (n - nonzero, 0.0, 0.0, 0.0, low, high, mean, l1 / n, variance, l1, l2)


def _exact_raw(x, work=None):
    """The raw reductions DEVICE_STATS come from, of a flat floating-point
    tensor with at least one element that may hold NaN and infinities: they
    are counted as in _fast_raw, and left out of min, max, mean, abs_mean,
    variance, l1 and l2 (replaced by 0, by the largest finite value for min
    and its negative for max, and by 0 in the deviations from the mean of
    the finite elements). About fifteen passes, through `work` (a tensor like
    x; a new one by default): for a tensor known to hold a NaN or an
    infinity, and a loss of many elements."""
    n = x.numel()
    if work is None:
        work = torch.empty_like(x)
    largest = torch.finfo(x.dtype).max
    edge = torch.mul(x, 0.5 / largest, out=work).trunc_().clamp_(-1, 1)
    inf_difference = _count_sum(edge, n)
    infinities = _count_sum(edge.abs_(), n)
    shifted = _count_sum(edge.add_(1), n)
    finite = torch.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0, out=work)
    total = finite.sum()
    magnitude = finite.abs_()
    l1 = magnitude.sum()
    nonzero = _count_sum(magnitude.sign_(), n)
    mean = total / (shifted - 2 * infinities)  # / the finite elements
    deviation = torch.sub(x, mean, out=work).nan_to_num_(nan=0.0, posinf=0.0, neginf=0.0)
    deviation = torch.linalg.vector_norm(deviation)
    low = torch.nan_to_num(x, nan=largest, posinf=largest, neginf=largest, out=work).amin()
    high = torch.nan_to_num(x, nan=-largest, posinf=-largest, neginf=-largest, out=work).amax()
    return _stacked([inf_difference, infinities, shifted, total, low, high, l1, nonzero,
                     deviation], n)


def _decode_exact(raw, n):
    """DEVICE_STATS values from _exact_raw's `raw` of a tensor of `n` elements."""
    inf_difference, infinities, shifted, total, low, high, l1, nonzero, deviation = raw
    nans = n + infinities - shifted
    finite = n - nans - infinities
    counts = (finite - nonzero, nans, (infinities + inf_difference) / 2,
              (infinities - inf_difference) / 2)
    if finite <= 0:
        return counts + (math.nan,) * 7
    mean = total / finite
    square = deviation * deviation
    return counts + (low, high, mean, l1 / finite, square / finite, l1,
                     math.sqrt(square + finite * mean * mean))


def _statistics(tensor):
    """DEVICE_STATS of `tensor` as a dict, fetched at once (for tests and
    interactive use; the hook fetches a step's statistics in one transfer)."""
    x = _as_float(tensor)
    if not x.numel():
        return {}
    return dict(zip(DEVICE_STATS, _decode_exact(_to_host(_exact_raw(x)), x.numel())))


def _units(tensor):
    """`tensor` as [batch, units]: a unit is one position over the non-batch axes."""
    return tensor.detach().reshape(tensor.shape[0], -1) if tensor.dim() > 1 \
        else tensor.detach().reshape(1, -1)


def _quantiles(x):
    """p5 and p95 of flat floating-point x (NaN where x holds NaN), as a vector
    on its device, from at most QUANTILE_ELEMENTS evenly spaced elements."""
    n = x.numel()
    if n > QUANTILE_ELEMENTS:
        x = x[::-(-n // QUANTILE_ELEMENTS)]
    return torch.quantile(x, torch.tensor([0.05, 0.95], dtype=x.dtype, device=x.device))


def _channel_means(x, axis):
    """Each channel's mean of image batch x ([N, C, H, W] with axis 1), as a
    vector on its device; None when x is no image batch."""
    if x.dim() != 4 or not x.is_floating_point() or not 0 < axis < 4 or \
            not 0 < x.shape[axis] <= IMAGE_MAX_CHANNELS or not x.numel():
        return None
    return x.detach().transpose(0, axis).reshape(x.shape[axis], -1).mean(1, dtype=torch.float32)


def _norms(tensors):
    """The L2 norm of each tensor (a list of 0-dim tensors on their devices):
    one multi-tensor operation for float32 and float64 (one kernel launch per
    device on a GPU); float16 and bfloat16 in float32, one by one."""
    if tensors and tensors[0].dtype in (torch.float32, torch.float64):
        return list(torch._foreach_norm(tensors))
    return [torch.linalg.vector_norm(t, dtype=torch.float32) for t in tensors]


def _loss_stats(values):
    """LOSS_STATS of a loss's values, on the host: counts of NaN and
    infinities; min, max and mean of the finite ones."""
    finite = [v for v in values if math.isfinite(v)]
    nan = sum(1 for v in values if v != v)
    pos_inf = sum(1 for v in values if v == math.inf)
    neg_inf = sum(1 for v in values if v == -math.inf)
    if not finite:
        return (float(nan), float(pos_inf), float(neg_inf), math.nan, math.nan, math.nan)
    return (float(nan), float(pos_inf), float(neg_inf), min(finite), max(finite),
            math.fsum(finite) / len(finite))
