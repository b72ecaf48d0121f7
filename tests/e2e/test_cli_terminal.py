"""The ``docuthinker`` command in a real terminal (a pty, driven by pexpect) against the real mesh, as a new
user meets it: no token yet (and a hint), ``login`` (the token typed at a hidden prompt) and ``config``, a
folder uploaded in parallel, documents named by part of their name or the start of their id, an interactive
``chat`` whose follow-up is read against the first question, ``chat --continue`` the next day, and the
conversation listed, renamed and shown."""

from __future__ import annotations

import os
import pathlib
import re
import stat
import sys

import pexpect
import pytest

pytestmark = pytest.mark.e2e

TENANT = "cli-pty"
MEMO = ("Harbor Street warehouse: facilities memo.\n\nThe Harbor Street warehouse opened in 1998 and stores spare "
        "turbine parts. Its annual fire inspection is scheduled for 14 March 2027 and will be carried out by "
        "inspector Dana Whitfield. Staff badges are renewed every January by the security office.")
NOTES = ("# Canteen notes\n\nThe canteen serves lunch from noon until two o'clock. Complaints about the queue go to "
         "the facilities manager, Ruth Okafor.")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
PROMPT = r"you>(\x1b\[[0-9;]*m)* "  # rich styles the prompt (NO_COLOR drops colours, not bold)


@pytest.fixture(scope="module")
def terminal(mesh, tmp_path_factory):
    home = tmp_path_factory.mktemp("cli-home")
    script = pathlib.Path(sys.executable).parent / "docuthinker"
    if not script.is_file():
        pytest.fail(f"the docuthinker console script is missing: expected {script}; run `make setup`")
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCUTHINKER_")}
    env.update({"HOME": str(home), "DOCUTHINKER_CONFIG": str(home / "config.toml"),
                "DOCUTHINKER_DATA_DIR": str(home / "no-mesh-here"), "COLUMNS": "200", "NO_COLOR": "1",
                "TERM": "xterm"})

    def spawn(*args: str) -> pexpect.spawn:
        child = pexpect.spawn(str(script), list(args), env=env, cwd=str(home), encoding="utf-8", timeout=300,
                              dimensions=(40, 200))
        return child

    def run(*args: str, status: int = 0) -> str:
        child = spawn(*args)
        child.expect(pexpect.EOF)
        child.close()
        text = ANSI.sub("", child.before)
        assert child.exitstatus == status, f"{args}: {child.exitstatus}\n{text}"
        return text

    return home, spawn, run, mesh.mint(TENANT, subject="carol")


def test_a_new_user_logs_in_uploads_and_chats_in_a_terminal(mesh, terminal):
    home, spawn, run, token = terminal
    folder = home / "papers"
    (folder / "sub").mkdir(parents=True)
    (folder / "harbor-memo.txt").write_text(MEMO)
    (folder / "sub" / "canteen.md").write_text(NOTES)
    (folder / ".hidden.txt").write_text("not uploaded")
    (folder / "tool.exe").write_bytes(b"MZ")

    # No token anywhere: refused, with what to do about it.
    refused = run("--gateway", mesh.base_url, "docs", status=4)
    assert "docuthinker login" in refused and "DOCUTHINKER_TOKEN" in refused

    # login: the token typed at a prompt that does not echo it, checked against the gateway, kept 0600.
    login = spawn("login", "--gateway", mesh.base_url)
    login.expect("Bearer token: ")
    login.sendline(token)
    login.expect(pexpect.EOF)
    login.close()
    said = ANSI.sub("", login.before)
    assert login.exitstatus == 0, said
    assert token not in said and f"tenant {TENANT}, user carol" in said
    config = home / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600 and mesh.base_url in config.read_text()
    shown = run("config")
    assert f"gateway:     {mesh.base_url} (from the config file" in shown and "user carol" in shown
    assert token not in shown  # masked

    # A folder, two at a time: the documents it holds (the hidden file and the unreadable type left out).
    uploaded = run("upload", str(folder), "--parallel", "2", "--wait")
    assert "harbor-memo.txt" in uploaded and "canteen.md" in uploaded
    assert "hidden" not in uploaded and "tool.exe" not in uploaded
    listing = run("docs")
    memo_row = next(line for line in listing.splitlines() if "harbor-memo.txt" in line)
    short_id = re.search(r"\b[0-9a-f]{12}\b", memo_row).group()

    # Documents by part of their name, or by the start of their id.
    assert "Whitfield" in run("entities", "harbor")
    assert "Dana Whitfield" in run("entities", short_id[:6])
    ambiguous = run("summary", "a", status=2)
    assert "harbor-memo.txt" in ambiguous and "canteen.md" in ambiguous

    # chat: answers stream in, and the follow-up is read against the first question.
    chat = spawn("chat")
    chat.expect(PROMPT)
    chat.sendline("Who will carry out the fire inspection?")
    chat.expect("Dana Whitfield")
    chat.expect(PROMPT)
    chat.sendline("When will she carry it out?")
    chat.expect(r"read as: When will Dana Whitfield carry the fire inspection out\?")
    chat.expect("14 March 2027")
    chat.expect(PROMPT)
    chat.sendline("")
    chat.expect("docuthinker chat --continue")
    chat.expect(pexpect.EOF)
    chat.close()
    assert chat.exitstatus == 0

    # --continue: a later question goes on from the same conversation.
    later = run("chat", "--continue", "What does she inspect?")
    assert "(read as: What does Dana Whitfield inspect?)" in later and "fire inspection" in later

    conversations = run("conversations")
    row = next(line for line in conversations.splitlines() if "Who will carry out the fire inspection?" in line)
    conversation = re.search(r"\b[0-9a-f]{12}\b", row).group()
    assert re.search(r"\b3\b", row)  # three questions
    assert "renamed" in run("conversations", "rename", conversation[:6], "Fire inspection")
    story = run("conversations", "show", "fire insp")
    assert story.index("Who will carry out") < story.index("When will she carry it out?") < story.index(
        "What does she inspect?")
    assert "removed" in run("logout")
    run("--gateway", mesh.base_url, "docs", status=4)
