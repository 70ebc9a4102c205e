# Solutions to notebooks/10_compiler_write_a_pass.ipynb — one section per exercise; each is the
# solved source of that exercise's answer cell (see docs/exercises.md).

# %% exercise: ch10.muls_in_ir
v = cubelab.exercises.get("ch10.muls_in_ir").variant
# CUBE_POS is rebuilt as z * (nx * ny) + y * nx + x: three multiplications; ABSOLUTE_POS is
# CUBE_POS * CUBE_DIM + UNIT_POS: one more. Then the ones written.
hidden = {"scale_abs": 4, "shift_cube": 3, "poly_abs": 4}[v.kernel]
written = {"scale_abs": 1, "shift_cube": 1, "poly_abs": 2}[v.kernel]
answer = hidden + written

# %% exercise: ch10.constant_fold
import operator

_FOLD = {"arith.add": operator.add, "arith.sub": operator.sub, "arith.mul": operator.mul}


class ConstantFold:
    name = "constant-fold"

    def run(self, definition):
        constants = {}  # value id -> the constant it holds
        for op in definition.walk():  # program order: a constant before its uses
            if op.name == "arith.constant":
                constants[op.result.id] = op.attrs["value"]
                continue
            if op.name not in _FOLD or not all(v.id in constants for v in op.operands):
                continue
            a, b = (constants[v.id] for v in op.operands)
            elem = op.result.type.elem.value
            if elem == "f32":  # f32 rounds after every op, as the kernel computes
                with np.errstate(all="ignore"):
                    value = float(_FOLD[op.name](np.float32(a), np.float32(b)))
            else:  # u32 and i32 wrap modulo 2**32; i32 is two's complement
                value = _FOLD[op.name](a, b) & 0xFFFFFFFF
                if elem == "i32" and value >= 2**31:
                    value -= 2**32
            op.name, op.operands, op.attrs = "arith.constant", [], {"value": value}
            constants[op.result.id] = value
        return definition


answer = ConstantFold()

# %% exercise: ch10.which_sources_change
answer = {"ir", "wgsl", "msl", "cuda"}

# %% exercise: ch10.strength_reduce
from cubelab.ir import U32, Op, Value
from cubelab.ir.analysis import max_value_id


class StrengthReduce:
    name = "strength-reduce"

    def run(self, definition):
        constants = {op.result.id: op.attrs["value"] for op in definition.walk()
                     if op.name == "arith.constant"}
        fresh = max_value_id(definition) + 1
        for block in definition.blocks():
            out = []
            for op in block.ops:
                if op.name == "arith.mul" and op.result.type == U32:
                    for x, c in (op.operands, op.operands[::-1]):
                        k = constants.get(c.id)
                        if isinstance(k, int) and k >= 2 and k & (k - 1) == 0:
                            amount = Value(fresh, U32)
                            fresh += 1
                            out.append(Op("arith.constant", [], [amount],
                                          {"value": k.bit_length() - 1}, [], op.loc))
                            op.name, op.operands = "arith.shl", [x, amount]
                            break
                out.append(op)
            block.ops[:] = out
        return definition


answer = StrengthReduce()

# %% exercise: ch10.dead_code
from cubelab.ir.analysis import is_pure


class DeadCode:
    name = "dead-code"

    def run(self, definition):
        while True:
            uses = {}
            for op in definition.walk():
                for v in op.operands:
                    uses[v.id] = uses.get(v.id, 0) + 1
            removed = 0
            for block in definition.blocks():
                keep = [op for op in block.ops
                        if not (is_pure(op) and op.results
                                and not any(uses.get(r.id) for r in op.results))]
                removed += len(block.ops) - len(keep)
                block.ops[:] = keep
            if not removed:
                return definition


answer = DeadCode()

# %% exercise: ch10.hoist_invariants
from cubelab.ir.analysis import is_pure


class HoistInvariants:
    name = "hoist-invariants"

    def run(self, definition):
        moved = True
        while moved:  # an op moved out of an inner loop may be invariant in the outer one too
            moved = False
            for block in list(definition.blocks()):
                out = []
                for op in block.ops:
                    if op.name == "scf.for":
                        body = op.regions[0]
                        inside = {a.id for a in body.args}
                        for inner in body.walk():
                            inside.update(r.id for r in inner.results)
                            for region in inner.regions:
                                inside.update(a.id for a in region.args)
                        stay = []
                        for inner in body.ops:
                            if is_pure(inner) and inner.results and \
                                    not any(v.id in inside for v in inner.operands):
                                out.append(inner)  # now right before the loop
                                inside.difference_update(r.id for r in inner.results)
                                moved = True
                            else:
                                stay.append(inner)
                        body.ops[:] = stay
                    out.append(op)
                block.ops[:] = out
        return definition


answer = HoistInvariants()

# %% exercise: ch10.cache_knows_passes
v = cubelab.exercises.get("ch10.cache_knows_passes").variant
# one compile for the first launch, then one after each change of the pass list (a pass
# added, removed, reordered or set up differently); the same passes set again change nothing
answer = {"a": 2, "b": 3, "c": 4}[v.steps]
