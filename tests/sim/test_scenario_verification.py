"""Scenarios whose instruction asks for a check after the change (the port is free, the
extracted files listed, ``git status``, the crontab shown, the script run, the package
imported): the change alone scored 1, so RL learnt to skip the check. Each now has an
``action_matches`` with ``after`` the change's pattern.

Episodes are played on the witness backend, so only the checks decide the reward. An ``int``
in an episode is an index into the scenario's candidate actions; a string is the action itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.domains import get_domain
from tests.helpers.witness import play_on_witness

pytestmark = pytest.mark.filterwarnings("ignore:this AgentWorld env runs on the 'scripted'")


def keys(command: str) -> str:
    return json.dumps([{"keystrokes": f"{command}\n", "duration": 0.5}])


def bash(command: str) -> str:
    return json.dumps({"name": "bash", "arguments": {"command": command}})


@dataclass(frozen=True)
class Task:
    change: str
    """A right change, spelled otherwise than the gold's."""
    checks: tuple[str, ...]
    """Right checks, spelled otherwise than the gold's."""
    in_one_command: tuple[str, str]
    """The change then the check in one command, and the check then the change."""
    not_checks: tuple[str, ...]
    """Actions after the change that check nothing the task asked."""
    gold_unchecked: tuple[int | str, ...]
    """The gold without its check."""
    gold_checked_first: tuple[int | str, ...]
    """The gold's steps, its check only before its change."""
    end: str = "[]"


CRON_ENTRY = 'echo "30 2 * * * /usr/local/bin/backup.sh" | crontab -'
TASKS = {
    "terminal-stop-port-8080": Task(
        keys("fuser -k 8080/tcp"),
        (keys("lsof -i :8080 || echo free"), keys("netstat -tlnp | grep 8080"),
         keys('curl -s "http://localhost:8080/" || echo nothing listens'),
         keys("fuser -v 8080/tcp"), keys("nc -z localhost 8080 && echo busy || echo free"),
         keys("sleep 1\nss -ltn | grep :8080")),
        (keys("kill 4412 && sleep 1 && ss -ltn | grep 8080"),
         keys("ss -ltn | grep 8080 && kill 4412")),
        (keys("ss -ltnp | grep 80"), keys("fuser -k 8080/tcp"), keys("ps aux | grep http"),
         keys("ss -ltn | grep 18080")),
        (0, 1, 3), (2, 1, 3)),
    "terminal-extract-archive": Task(
        keys("tar xzf data.tar.gz"),
        (keys("find /app/data -type f"), keys("tree data"), keys("ls -R"),
         keys("tar -tzf data.tar.gz"), keys("du -ah /app/data"), keys("cd /app\nls data/")),
        (keys("tar -xzf data.tar.gz && ls -l data/"), keys("ls -l data/; tar -xzf data.tar.gz")),
        (keys("ls"), keys("ls -la data.tar.gz"), keys("ls -lr"), keys("cat data/README.txt")),
        (0, 3), (1, 0, 3)),
    "terminal-git-feature-branch": Task(
        keys("git checkout -b feature/login"),
        (keys("git branch"), keys("git branch --show-current"),
         keys("git rev-parse --abbrev-ref HEAD"), keys("git -C /app status -sb")),
        (keys("git switch -c feature/login && git status"),
         keys("git status && git switch -c feature/login")),
        (keys("git branch feature/other"), keys("git branch -D old"), keys("git log -1")),
        (0, 3), (1, 0, 3)),
    "terminal-cron-backup": Task(
        keys(CRON_ENTRY),
        (keys("crontab -u root -l"), keys("crontab -l | grep backup")),
        (keys(f"{CRON_ENTRY} && crontab -l"), keys(f"crontab -l; {CRON_ENTRY}")),
        (keys("crontab -e"), keys("systemctl status cron"), keys("cat /etc/crontab")),
        (1, 3), (0, 1, 3)),  # the old gold, which showed the empty crontab
    "terminal-script-permission": Task(
        keys("chmod 755 deploy.sh"),
        (keys("./deploy.sh"), keys("bash deploy.sh"), keys("sh /opt/app/deploy.sh"),
         keys("sudo ./deploy.sh")),
        (keys("chmod u+x deploy.sh; /opt/app/deploy.sh"), keys("./deploy.sh; chmod +x deploy.sh")),
        (keys("cat deploy.sh"), keys("ls -l deploy.sh"), keys("chmod +x ./deploy.sh"),
         keys("deploy.sh")),
        (keys("chmod +x deploy.sh"), 3), (keys("./deploy.sh"), keys("chmod +x deploy.sh"), 3)),
    "swe-install-in-venv": Task(
        bash("python3 -m venv venv && venv/bin/pip install requests"),
        (bash("venv/bin/python -c 'import requests'"),
         bash("source venv/bin/activate && "
              'python -c "import requests; print(requests.__version__)"'),
         bash("venv/bin/python3 -c 'from requests import Session'")),
        (bash("python3 -m venv .venv && .venv/bin/pip install requests && "
              ".venv/bin/python -c 'import requests'"),
         bash("python3 -c 'import requests' || "
              "(python3 -m venv .venv && .venv/bin/pip install requests)")),
        (bash("venv/bin/pip show requests"), bash("venv/bin/pip list | grep -i requests"),
         json.dumps({"name": "write_file",
                     "arguments": {"path": "check.py", "content": "import requests\n"}})),
        (1, 3), (2, 1, 3), end="requests is installed in venv and imports."),
}
CHECKS = [(sid, check) for sid, task in TASKS.items() for check in task.checks]
NOT_CHECKS = [(sid, action) for sid, task in TASKS.items() for action in task.not_checks]


def domain(scenario_id: str) -> str:
    return scenario_id.partition("-")[0]


def reward(scenario_id: str, *episode: int | str) -> float:
    return play_on_witness(domain(scenario_id), scenario_id, [*episode, TASKS[scenario_id].end])


@pytest.mark.parametrize("scenario_id", TASKS)
def test_the_gold_scores_and_without_its_check_scores_nothing(scenario_id: str) -> None:
    gold = get_domain(domain(scenario_id)).builtin[scenario_id].solution
    assert play_on_witness(domain(scenario_id), scenario_id, gold) == 1.0
    assert play_on_witness(domain(scenario_id), scenario_id,
                           list(TASKS[scenario_id].gold_unchecked)) == 0.0


@pytest.mark.parametrize("scenario_id", TASKS)
def test_the_change_without_its_check_scores_nothing(scenario_id: str) -> None:
    assert reward(scenario_id, TASKS[scenario_id].change) == 0.0


@pytest.mark.parametrize("scenario_id", TASKS)
def test_the_check_only_before_the_change_scores_nothing(scenario_id: str) -> None:
    episode = list(TASKS[scenario_id].gold_checked_first)
    assert play_on_witness(domain(scenario_id), scenario_id, episode) == 0.0


@pytest.mark.parametrize(("scenario_id", "check"), CHECKS)
def test_another_spelling_of_the_check_scores_after_the_change_only(scenario_id: str,
                                                                   check: str) -> None:
    change = TASKS[scenario_id].change
    assert reward(scenario_id, change, check) == 1.0
    assert reward(scenario_id, check, change) == 0.0


@pytest.mark.parametrize("scenario_id", TASKS)
def test_the_check_counts_later_in_the_changes_own_command_only(scenario_id: str) -> None:
    after, before = TASKS[scenario_id].in_one_command
    assert reward(scenario_id, after) == 1.0
    assert reward(scenario_id, before) == 0.0


@pytest.mark.parametrize(("scenario_id", "action"), NOT_CHECKS)
def test_an_action_that_checks_nothing_asked_scores_nothing(scenario_id: str,
                                                             action: str) -> None:
    assert reward(scenario_id, TASKS[scenario_id].change, action) == 0.0
