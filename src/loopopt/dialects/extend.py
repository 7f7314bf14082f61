"""One class per op name: loopopt's additions to a dialect go into xDSL's own `Dialect` object.

loopopt adds MLIR 22's custom syntax to some of xDSL's ops (gpu_ext, affine_ext, llvm_ext). Each
such op is a subclass of xDSL's class for that op, and `extend` puts it in xDSL's dialect in
place of xDSL's class, so that every context that loads xDSL's dialect (loopopt's, plain
`xdsl-opt` through the `xdsl.universe` plugin, another compiler's built from
`xdsl.dialects.get_all_dialects()`) reads the syntax with the same class, and no name is ever
registered twice. The ops that xDSL's own classes build remain valid: loopopt's passes match
on xDSL's classes, of which the subclasses are instances.

    extend(xdsl.dialects.gpu.GPU, [ThreadIdOp, ...], [AddressSpaceAttr])
    # now Context().load_dialect(xdsl.dialects.gpu.GPU) parses `gpu.thread_id x upper_bound 64`

Contexts that loaded the dialect before loopopt's dialect modules were imported keep xDSL's
classes (importing `loopopt.universe`, which `xdsl-opt` does when it looks for plugins, or
`loopopt.context` runs the `extend` calls).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute, Dialect, Operation


def extend(
    dialect: Dialect, ops: Sequence[type[Operation]], attributes: Sequence[type[Attribute]] = ()
) -> None:
    """Put `ops` into xDSL's `dialect`: each replaces the class of the same name, of which it
    must be a subclass; ops and attributes of new names are added. Idempotent."""
    mine = {op.name: op for op in ops}
    current = {op.name: op for op in dialect.operations}
    for name, op in mine.items():
        old = current.get(name)
        if old is not None and not issubclass(op, old):
            raise TypeError(f"{op.__name__} ({name}) must subclass {old.__qualname__}")
    # xDSL has no API to change a dialect's ops; its dataclass fields are the lists it reads.
    dialect._operations[:] = [  # pyright: ignore[reportPrivateUsage]
        mine.get(op.name, op) for op in dialect.operations
    ] + [op for name, op in mine.items() if name not in current]
    names = {attr.name for attr in dialect.attributes}
    dialect._attributes.extend(  # pyright: ignore[reportPrivateUsage]
        attr for attr in attributes if attr.name not in names
    )


class RestatedFields:
    """First base of a subclass of an xDSL op that restates the op's fields and has no checks of
    its own: IRDL checks the subclass's fields, and xDSL's `verify_`, which would check xDSL's
    (refusing the properties the subclass adds), is not inherited."""

    def verify_(self) -> None:
        return None
