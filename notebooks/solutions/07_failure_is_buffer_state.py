# Solutions to notebooks/07_failure_is_buffer_state.ipynb — one section per exercise.

# %% exercise: ch07.which_failed
answer = "b, c"

# %% exercise: ch07.written_set
answer = "p_out, p_spare, q_out"

# %% exercise: ch07.who_reports
answer = "check, sync_buffers, read_one"

# %% exercise: ch07.dry_run_claims
answer = 0

# %% exercise: ch07.repair
@cube(launch=True)
def reset(a: SliceMut[f32]):
    if ABSOLUTE_POS < a.len():
        a[ABSOLUTE_POS] = f32(1.0)

answer = reset
