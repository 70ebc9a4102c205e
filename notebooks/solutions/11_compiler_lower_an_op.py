# Solutions to notebooks/11_compiler_lower_an_op.ipynb — one section per exercise; each is the
# solved source of that exercise's answer cell (see docs/exercises.md).

# %% exercise: ch11.what_fails
v = cubelab.exercises.get("ch11.what_fails").variant
given = {"a": {"wgsl", "cpu"}, "b": {"msl", "cuda"}, "c": {"cpu", "msl"}}[v.parts]
# the IR needs only the declaration; each other layer needs its own part
answer = {"wgsl", "msl", "cuda", "cpu"} - given

# %% exercise: ch11.wgsl_spelling
v = cubelab.exercises.get("ch11.wgsl_spelling").variant
answer = {"sigmoid": "1.0 / (1.0 + exp(-{0}))",
          "silu": "{0} / (1.0 + exp(-{0}))",
          "softsign": "{0} / (1.0 + abs({0}))"}[v.fn]

# %% exercise: ch11.components_in_c
v = cubelab.exercises.get("ch11.components_in_c").variant
# once per component (the C family writes a vector as a struct) per call of the op
width, calls = {"vec2_once": (2, 1), "vec4_once": (4, 1), "vec4_twice": (4, 2)}[v.kernel]
answer = width * calls

# %% exercise: ch11.cpu_step
v = cubelab.exercises.get("ch11.cpu_step").variant
one = np.float32(1)
answer = {"sigmoid": lambda x: one / (one + np.exp(-x)),
          "silu": lambda x: x / (one + np.exp(-x)),
          "softsign": lambda x: x / (one + np.abs(x))}[v.fn]

# %% exercise: ch11.cache_knows_ops
v = cubelab.exercises.get("ch11.cache_knows_ops").variant
# the first launch, then one compile after each change to the op (a spelling or a step that
# differs, or another op added); the same spelling given again changes nothing
answer = {"a": 2, "b": 3, "c": 4}[v.steps]

# %% exercise: ch11.lower_by_pass
from cubelab.ir import F32, Op, Value
from cubelab.ir.analysis import max_value_id

v = cubelab.exercises.get("ch11.lower_by_pass").variant


class LowerLessonOp:
    name = "lower-lesson-op"
    op = f"lesson.{v.fn}"

    def run(self, definition):
        fresh = max_value_id(definition) + 1
        for block in definition.blocks():
            out = []
            for op in block.ops:
                if op.name != self.op:
                    out.append(op)
                    continue
                (x,) = op.operands
                ty = x.type

                def emit(name, operands, result=None, **attrs):
                    nonlocal fresh
                    if result is None:
                        result, fresh = Value(fresh, ty), fresh + 1
                    out.append(Op(name, operands, [result], attrs, [], op.loc))
                    return result

                def const(value):  # a scalar constant, splatted to the operand's width
                    nonlocal fresh
                    c, fresh = Value(fresh, F32), fresh + 1
                    out.append(Op("arith.constant", [], [c], {"value": value}, [], op.loc))
                    return c if ty.width == 1 else emit("vector.splat", [c])

                one, done = const(1.0), op.result  # the last op defines the op's own result
                if v.fn == "softsign":  # x / (1 + |x|)
                    d = emit("arith.add", [one, emit("math.unary", [x], fn="abs")])
                else:  # 1 + exp(-x), for 1 / it (sigmoid) or x / it (silu)
                    d = emit("arith.add", [one, emit("math.unary", [emit("arith.neg", [x])],
                                                     fn="exp")])
                emit("arith.div", [one if v.fn == "sigmoid" else x, d], done)
            block.ops[:] = out
        return definition


answer = LowerLessonOp()
