"""The single-node Slurm the scale tests use, on its own (no engine): an array of two tasks and
a job that depends on it with afterok, as submit.sh chains them. Skipped without Slurm."""

from __future__ import annotations

import pytest

from tests.scale.slurm_cluster import SlurmCluster, available

pytestmark = pytest.mark.slurm


def test_array_then_dependent_job(tmp_path):
    reason = available()
    if reason:
        pytest.skip(reason)
    cluster = SlurmCluster(tmp_path / "slurm")
    try:
        cluster.start()
        array = tmp_path / "array.sh"
        array.write_text(
            "#!/bin/bash\n#SBATCH --array=1-2\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=64M\n"
            f"#SBATCH --output={tmp_path}/task-%a.out\necho task $SLURM_ARRAY_TASK_ID\n"
        )
        after = tmp_path / "after.sh"
        after.write_text(f"#!/bin/bash\n#SBATCH --output={tmp_path}/after.out\ncat {tmp_path}/task-*.out\n")
        array_id = cluster.run("sbatch", "--parsable", str(array), cwd=tmp_path).stdout.strip().split(";")[0]
        after_proc = cluster.run(
            "sbatch",
            "--parsable",
            f"--dependency=afterok:{array_id}",
            "--kill-on-invalid-dep=yes",
            str(after),
            cwd=tmp_path,
        )
        after_id = after_proc.stdout.strip().split(";")[0]
        assert array_id.isdigit() and after_id.isdigit(), after_proc.stderr
        states = cluster.wait([array_id, after_id], timeout=120)
        assert states == {f"{array_id}_1": "COMPLETED", f"{array_id}_2": "COMPLETED", after_id: "COMPLETED"}, (
            cluster.log("slurmctld")
        )
        assert (tmp_path / "after.out").read_text() == "task 1\ntask 2\n"
    finally:
        cluster.stop()
