"""nbgrader configuration for the cubelab course (this folder is the nbgrader course directory).

    cubelab course build                        # from the repository root: course/source/<chapter>/
    cd course
    nbgrader generate_assignment 01_first_kernels    # → release/ (solutions cut, cells locked)
    nbgrader autograde 01_first_kernels              # submitted/<student>/… → autograded/
    nbgrader generate_feedback 01_first_kernels      # → feedback/<student>/…/*.html

docs/classroom.md walks through releasing, collecting and grading on a JupyterHub.
"""

import os

c = get_config()  # noqa: F821 (nbgrader executes this file with get_config defined)

c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = os.environ.get("CUBELAB_COURSE_ID", "cubelab")

# Grading must not depend on the grader's machine: a check without a client runs on the CPU
# runtime (CUBELAB_GRADING) and so does every other cell of the chapter (CUBELAB_DEVICE). The
# kernels nbgrader starts inherit this process's environment.
os.environ.setdefault("CUBELAB_GRADING", "1")
os.environ.setdefault("CUBELAB_DEVICE", "cpu")

# Each submission is graded against its own student's variant of every exercise: in an
# autograde run cubelab reads the student id from the submission's folder
# (autograded/<student>/<assignment>/). A CUBELAB_STUDENT left in the grader's environment would
# take precedence and grade every student against one variant, so it goes.
os.environ.pop("CUBELAB_STUDENT", None)

# `cubelab course build` keeps the chapter's template above the solution region, so the student
# gets the template back when the region is cut: the stub must be empty (nbgrader's default,
# `raise NotImplementedError()`, would stop an unattended run of the released notebook).
c.ClearSolutions.code_stub = {"python": ""}

# A chapter's cells launch real kernels; the slowest take seconds on the CPU runtime. The default
# 30 s per cell is too tight on a loaded grading machine.
c.Execute.timeout = 300

# Students run the locked cells but cannot edit or delete them; autograde restores any locked
# cell whose checksum changed anyway (and says so in its log).
c.LockCells.lock_readonly_cells = True
c.LockCells.lock_grade_cells = True
