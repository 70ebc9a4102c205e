# Solutions to notebooks/07_failure_is_buffer_state.ipynb — one section per exercise, the full
# answer cell. Exercises with variants compute the answer from the student's own program.

# %% exercise: ch07.which_failed
v = cubelab.exercises.get("ch07.which_failed").variant
failed = set()
for step in v.program:
    if step[0] == "fail":            # a compile failure: its output carries the error
        failed.add(step[1])
    elif step[0] == "scale":         # reads src, writes dst as a pure output
        src, dst = step[1], step[2]
        if src in failed:
            failed.add(dst)          # skipped: dst points at the root cause
        else:
            failed.discard(dst)      # ran: dst repaired
    # "inc" reads what it writes: on a failed buffer it is skipped and changes nothing
answer = failed

# %% exercise: ch07.written_set
v = cubelab.exercises.get("ch07.written_set").variant
answer = {"p_out", "p_spare"}        # no IR: the declared IO, both SliceMut
if v.case.reads == "p_out":          # the second launch is skipped, but its IR answers
    answer.add("q_out" if v.case.second.__name__ == "add_one_of_two" else "q_spare")

# %% exercise: ch07.repair
@cube(launch=True)
def reset(a: SliceMut[f32]):
    if ABSOLUTE_POS < a.len():
        a[ABSOLUTE_POS] = f32(1.0)

answer = reset

# %% exercise: ch07.who_reports
v = cubelab.exercises.get("ch07.who_reports").variant
# sync answers for the device; x was only read; out and spare (declared writable) carry it
answer = {str(i) for i, call in enumerate(v.calls, 1) if call != "sync()" and "x" not in call}

# %% exercise: ch07.dry_run_claims
v = cubelab.exercises.get("ch07.dry_run_claims").variant
kernel_ids = {("scale", d) for d in v.scales} | {("inc", d) for d in v.incs}
answer = (len(kernel_ids), 0)        # every new KernelId compiles; a skip claims nothing
