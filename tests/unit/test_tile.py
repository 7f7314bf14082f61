"""loop-tile: the tiling utility (loops/tile.py), the pass, and execution equivalence.

`iteration_points` interprets a loop nest (bounds only) and lists, for every execution of each
affine.store, the values of the named loops around it: tiling must produce the same points.
The interchange and strip-mine tests reuse it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping

import kernels
import numpy as np
import pytest
from equivalence import assert_equivalent, run, transform
from xdsl.dialects import affine, arith, func
from xdsl.dialects.builtin import AffineMapAttr, IntegerAttr, ModuleOp
from xdsl.ir import Block, SSAValue

from loopopt.context import parse_module
from loopopt.diagnostics import IllegalTransformError, LoopoptError
from loopopt.dialects.loopopt import PARALLEL
from loopopt.loops.nest import find_loop, loop_name, loops_in, perfect_band
from loopopt.loops.tile import tile_band

Point = tuple[int, tuple[tuple[str, int], ...]]


def iteration_points(
    module: ModuleOp | str,
    func_name: str,
    names: Collection[str],
    args: Mapping[str, int] | None = None,
) -> list[Point]:
    """(store index, ((loop name, value), ...)) for every store executed, in execution order,
    with the values of the loops named in `names`. Index arguments of the function take their
    values from `args` (by argument name)."""
    if isinstance(module, str):
        module = parse_module(module)
    fn = next(op for op in module.walk() if isinstance(op, func.FuncOp))
    assert fn.sym_name.data == func_name
    env: dict[SSAValue, int] = {}
    for arg in fn.body.block.args:
        if args and arg.name_hint in args:
            env[arg] = args[arg.name_hint]
    stores = [op for op in fn.walk() if isinstance(op, affine.StoreOp)]
    named = {loop.body.block.args[0]: loop_name(loop) for loop in loops_in(fn)}
    named = {v: name for v, name in named.items() if name in names}
    points: list[Point] = []

    def bound(amap: AffineMapAttr, operands: tuple[SSAValue, ...], is_lower: bool) -> int:
        m = amap.data
        values = [env[v] for v in operands]
        results = m.eval(values[: m.num_dims], values[m.num_dims :])
        return max(results) if is_lower else min(results)

    def run(block: Block) -> None:
        for op in block.ops:
            if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
                env[op.result] = op.value.value.data
            elif isinstance(op, affine.ForOp):
                lb = bound(op.lowerBoundMap, tuple(op.lowerBoundOperands), True)
                ub = bound(op.upperBoundMap, tuple(op.upperBoundOperands), False)
                for value in range(lb, ub, op.step.value.data):
                    env[op.body.block.args[0]] = value
                    run(op.body.block)
            elif isinstance(op, affine.StoreOp):
                ivs = tuple(sorted((name, env[v]) for v, name in named.items() if v in env))
                points.append((stores.index(op), ivs))
            else:
                for region in op.regions:
                    for inner in region.blocks:
                        run(inner)

    run(fn.body.block)
    return points


def loop_names(text: str) -> set[str]:
    return {name for loop in loops_in(parse_module(text)) if (name := loop_name(loop))}


def assert_same_points(
    before: str, after: ModuleOp | str, func_name: str, args: Mapping[str, int] | None = None
) -> list[Point]:
    """Both versions execute the same store instances (in any order); returns them."""
    names = loop_names(before)
    points = iteration_points(before, func_name, names, args)
    assert Counter(points) == Counter(iteration_points(after, func_name, names, args))
    return points


# ---------------------------------------------------------------- the utility


def _band(text: str, name: str = "i") -> tuple[ModuleOp, list[affine.ForOp]]:
    module = parse_module(text)
    return module, perfect_band(find_loop(module, name, "test"))


def test_divisible_constant_bounds_get_no_min(rng: np.random.Generator) -> None:
    text, name, _ = kernels.matmul(32, 16, 8, rng)
    module, band = _band(text)
    tiles, points = tile_band(band, [8, 4, 2])
    assert [loop_name(t) for t in tiles] == ["i_t", "j_t", "k_t"]
    assert [loop_name(p) for p in points] == ["i", "j", "k"]
    assert [t.step.value.data for t in tiles] == [8, 4, 2]
    assert all(len(p.upperBoundMap.data.results) == 1 for p in points)
    module.verify()
    assert_same_points(text, module, name)


def test_non_divisible_sizes_get_min_bounds(rng: np.random.Generator) -> None:
    text, name, _ = kernels.matmul(37, 29, 23, rng)
    module, band = _band(text)
    _, points = tile_band(band, [8, 16, 4])
    assert [len(p.upperBoundMap.data.results) for p in points] == [2, 2, 2]
    module.verify()
    assert_same_points(text, module, name)


def test_short_sizes_and_zero_sizes_leave_loops_untiled(rng: np.random.Generator) -> None:
    text, name, _ = kernels.conv2d(9, 7, 3, 2, rng)
    module, band = _band(text)
    q = band[3]
    tiles, points = tile_band(band, [4, 0, 2])
    assert [loop_name(t) for t in tiles] == ["i_t", "p_t"]
    assert [loop_name(p) for p in points] == ["i", "j", "p"]
    assert points[-1].body.block.first_op is q  # q is below the tiled band, untouched
    module.verify()
    assert_same_points(text, module, name)


@pytest.mark.parametrize("sizes", [[4, 3, 2], [3, 5], [0, 4, 3], [5, 0, 3], [1, 1, 1], [20, 20]])
def test_triangular_band_runs_every_point_once(sizes: list[int], rng: np.random.Generator) -> None:
    text, name, _ = kernels.syrk(13, 5, rng)
    module, band = _band(text)
    tile_band(band, sizes)
    module.verify()
    assert_same_points(text, module, name)


TRAPEZOID = """
func.func @trap(%A: memref<64xf32>, %n: index, %m: index) {
  affine.for %i = 2 to %n step 3 {
    affine.for %j = max affine_map<(d0) -> (0, d0 - 4)>(%i)
        to min affine_map<(d0)[s0] -> (d0 + 5, s0)>(%i)[%m] {
      affine.for %k = affine_map<(d0, d1) -> (d1 - d0 + 6)>(%i, %j) to 9 {
        %v = affine.load %A[%k] : memref<64xf32>
        affine.store %v, %A[%j] : memref<64xf32>
      } {loopopt.name = "k"}
    } {loopopt.name = "j"}
  } {loopopt.name = "i", loopopt.parallel}
  return
}
"""


@pytest.mark.parametrize("sizes", [[2, 3, 2], [4, 2], [0, 3, 2], [3, 0, 4], [5, 5, 5]])
@pytest.mark.parametrize("n, m", [(20, 30), (11, 7), (2, 5)])
def test_symbolic_trapezoid_with_steps(sizes: list[int], n: int, m: int) -> None:
    module, band = _band(TRAPEZOID)
    tile_band(band, sizes)
    module.verify()
    points = assert_same_points(TRAPEZOID, module, "trap", {"n": n, "m": m})
    assert points or n <= 2


SKEWED = """
func.func @skewed(%A: memref<9x13xf32>) {
  affine.for %i = 1 to 9 {
    affine.for %j = affine_map<(d0) -> (d0 * 2)>(%i) to affine_map<(d0) -> (d0 * 2 + 12)>(%i) {
      %u = affine.load %A[%i - 1, %j - %i * 2 + 1] : memref<9x13xf32>
      %c = affine.load %A[%i, %j - %i * 2] : memref<9x13xf32>
      %s = arith.addf %u, %c : f32
      affine.store %s, %A[%i, %j - %i * 2] : memref<9x13xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize("sizes", [[4, 4], [2, 3], [0, 4], [3, 6]])
def test_skewed_band_with_a_constant_trip_count_keeps_its_upper_bound(
    sizes: list[int], rng: np.random.Generator
) -> None:
    # j runs 12 iterations from 2i: a size dividing 12 must not drop `min(…, 2i + 12)`, the
    # tiles of j start at the lowest 2i of the i tile, not at each 2i
    module, band = _band(SKEWED)
    tile_band(band, sizes)
    module.verify()
    assert_same_points(SKEWED, module, "skewed")
    a = rng.standard_normal((9, 13)).astype(np.float32)
    np.testing.assert_allclose(run(str(module), "skewed", [a])[0], run(SKEWED, "skewed", [a])[0])


def test_attributes_and_fresh_names(rng: np.random.Generator) -> None:
    module, band = _band(TRAPEZOID)
    tiles, points = tile_band(band, [2, 2])
    assert PARALLEL in tiles[0].attributes and PARALLEL not in tiles[1].attributes
    assert PARALLEL in points[0].attributes
    again, _ = tile_band(points[:2], [2, 2])
    assert [loop_name(t) for t in again] == ["i_t2", "j_t2"]
    module.verify()


STRIDED = """
func.func @strided(%A: memref<64xf32>, %n: index) {
  affine.for %i = 0 to %n {
    affine.for %j = affine_map<(d0) -> (d0 * 2 - 3)>(%i) to 30 step 3 {
      %v = affine.load %A[%i] : memref<64xf32>
      affine.store %v, %A[%j] : memref<64xf32>
    } {loopopt.name = "j"}
  } {loopopt.name = "i"}
  return
}
"""


@pytest.mark.parametrize("sizes", [[2, 2], [3, 1], [0, 4], [5, 3]])
def test_step_with_lower_bound_on_band_loop_keeps_the_stride(sizes: list[int]) -> None:
    module, band = _band(STRIDED)
    tile_band(band, sizes)
    module.verify()
    for n in (1, 8, 17):
        assert_same_points(STRIDED, module, "strided", {"n": n})


def test_unsupported_bounds_are_refused_before_any_change() -> None:
    text = TRAPEZOID.replace(
        "to min affine_map<(d0)[s0] -> (d0 + 5, s0)>(%i)[%m] {", "to 9 step 2 {"
    )
    module, band = _band(text)
    before = str(module)
    with pytest.raises(
        LoopoptError, match="step 2 with a max lower bound that depends on loop 'i'"
    ):
        tile_band(band, [2, 2])
    assert str(module) == before
    module, band = _band(TRAPEZOID.replace("(d1 - d0 + 6)", "(d1 mod 4)"))
    with pytest.raises(LoopoptError, match="lower bound of loop 'k' is not linear in loop 'j'"):
        tile_band(band, [2, 0, 2])
    with pytest.raises(LoopoptError, match="tile size -1 is negative"):
        tile_band(band, [2, -1])
    with pytest.raises(LoopoptError, match="4 tile sizes for a band of 3 loops"):
        tile_band(band, [1, 1, 1, 1])


# ---------------------------------------------------------------- the pass


def test_pass_tiles_matmul_with_non_dividing_sizes(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.matmul(37, 29, 23, rng)
    assert_equivalent(text, name, arrays, "loop-tile{tile-sizes=8,16,4}")


def test_pass_tiles_conv2d(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.conv2d(11, 9, 3, 2, rng)
    after = assert_equivalent(text, name, arrays, "loop-tile{tile-sizes=4,4,2,0}")
    assert 'loopopt.name = "p_t"' in after and 'loopopt.name = "q_t"' not in after


@pytest.mark.parametrize("sizes", ["4,3,2", "0,4", "3,3"])
def test_pass_tiles_syrk(sizes: str, rng: np.random.Generator) -> None:
    text, name, arrays = kernels.syrk(13, 7, rng)
    assert_equivalent(text, name, arrays, f"loop-tile{{tile-sizes={sizes}}}")


def test_pass_tiles_twice(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.syrk(13, 7, rng)
    pipeline = "loop-tile{tile-sizes=6,6},loop-tile{tile-sizes=3,3 loops=i,j}"
    after = assert_equivalent(text, name, arrays, pipeline)
    assert 'loopopt.name = "i_t2"' in after


def test_pass_tiles_inner_loops_of_imperfect_nest(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.jacobi_1d(4, 21, rng)
    after = assert_equivalent(text, name, arrays, "loop-tile{tile-sizes=8 loops=i}")
    assert 'loopopt.name = "i_t"' in after and 'loopopt.name = "j_t"' not in after


def test_pass_refuses_wavefront_without_changing_it(rng: np.random.Generator) -> None:
    text, _, _ = kernels.wavefront(9, 8, rng)
    with pytest.raises(IllegalTransformError, match=r"not fully permutable.*\(<, >\)"):
        transform(text, "loop-tile{tile-sizes=4,4}")
    with pytest.raises(IllegalTransformError):
        transform(text, "loop-tile{tile-sizes=0,4}")
    assert "step 4" in transform(text, "loop-tile{tile-sizes=4}")  # one loop: always legal


@pytest.mark.parametrize(
    "options, message",
    [
        ("", "tile-sizes is required"),
        ("tile-sizes=4,-2", "tile size -2 is negative"),
        ("tile-sizes=4 loops=x", "no loop named 'x'"),
        ("tile-sizes=4,4 loops=i,k", "do not form a perfect nest"),
        ("tile-sizes=4,4,4 loops=i,j", "3 tile sizes for 2 loops"),
        ("tile-sizes=4 func=nope", "no function named 'nope'"),
    ],
)
def test_pass_validates_options(options: str, message: str, rng: np.random.Generator) -> None:
    text, _, _ = kernels.matmul(8, 8, 8, rng)
    with pytest.raises(LoopoptError) as info:
        transform(text, f"loop-tile{{{options}}}")
    assert message in info.value.message


def test_loop_names_that_are_not_ssa_names(rng: np.random.Generator) -> None:
    text, name, arrays = kernels.matmul(9, 7, 5, rng)
    text = text.replace('"i"', '"0 i"')
    after = assert_equivalent(text, name, arrays, "loop-tile{tile-sizes=4,4}")
    assert 'loopopt.name = "0 i_t"' in after


def test_sizes_past_a_default_band_are_ignored_with_a_warning(
    rng: np.random.Generator, capsys: pytest.CaptureFixture[str]
) -> None:
    """MLIR's affine-loop-tile cuts the sizes to the band; so does loop-tile's default band (an
    imperfect nest's band is its outer loop alone)."""
    text, name, arrays = kernels.matmul(7, 9, 5, rng)
    statement = "%z = affine.load %C[%i, 0] : memref<7x9xf32>\n    affine.for %j"
    imperfect = text.replace("affine.for %j", statement, 1)
    after = assert_equivalent(imperfect, name, arrays, "loop-tile{tile-sizes=3,4,2}")
    assert "step 3" in after and "step 4" not in after
    assert "3 tile sizes for the band (i) of 1 loops: 4, 2 ignored" in capsys.readouterr().err
