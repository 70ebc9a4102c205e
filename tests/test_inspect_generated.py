"""`inspect.generated` lists what @cube made of a kernel in the order of CubeCL's `cargo expand`
listing, and `inspect.generated_launch` writes its launch out in the order of CubeCL's generated
`launch` — both read from the kernel itself, so they follow its signature."""

from __future__ import annotations

import pytest

from cubelab import inspect
from tests.fixtures.kernels import add, saxpy


def in_order(text: str, parts: list[str]) -> None:
    at = 0
    for p in parts:
        found = text.find(p, at)
        assert found >= 0, f"{p!r} missing (or out of order) in:\n{text}"
        at = found + len(p)


def test_the_items_come_in_cargo_expands_order_with_their_rust_names():
    text = inspect.generated(saxpy)
    in_order(text, ["def saxpy(a: f32, x: Slice[Vector[F, N]], y: SliceMut[Vector[F, N]]):",
                    "`mod saxpy`", "`type F = DynamicScalar<_F>`", "F = Float.generic('F')",
                    "`type N = DynamicSize<_N>`", "def expand(__s, a, x, y)", "`struct Saxpy<..>`",
                    "class Saxpy(KernelInstance)", "`struct SaxpyInfo<..>`", "`Saxpy::new`",
                    "`KernelMetadata::id`", "def id(self) -> KernelId", "`CubeKernel::define`",
                    "`pub fn launch`", "saxpy.launch[F](client, cube_count, cube_dim, n, a, x, y)"])
    assert max(len(line) for line in text.splitlines()) <= 100


def test_the_launch_is_written_out_per_argument_with_its_io():
    text = inspect.generated_launch(saxpy)
    in_order(text, ["KernelSettings(cube_dim, ExecutionMode.Checked, AddressType.U32)",
                    "KernelLauncher()", "register_type", "types['F'] = F", "register_size",
                    "sizes['N'] = n", "launcher.register_scalar('f32', a)",
                    "declare_io(ReadOnly), Slice[Vector[F, N]]", "launcher.register_buffer(x)",
                    "declare_io(ReadWrite), SliceMut[Vector[F, N]]",
                    "launcher.register_buffer(y)", "Saxpy::new",
                    "SaxpyInfo { n: n, a: (), x: BufferCompilationArg, y: BufferCompilationArg }",
                    "launcher.launch(client, kernel, cube_count)"])


def test_the_listings_follow_the_kernel_both_launchers_and_comptime_arguments():
    assert "`pub fn launch_unchecked`" in inspect.generated(add)
    text = inspect.generated_launch(add, "launch_unchecked")
    in_order(text, ["ExecutionMode.Unchecked", "register_buffer(x)", "register_buffer(y)",
                    "declare_io(ReadWrite), SliceMut[F]", "register_buffer(out)",
                    "comptimes.append(relu)", "relu: relu"])
    assert "register_size" not in text  # add has no Size generic
    with pytest.raises(ValueError, match="no `launch_unchecked`"):
        inspect.generated_launch(saxpy, "launch_unchecked")
