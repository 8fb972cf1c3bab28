"""The offline suite without a browser: its tasks, its sites over real HTTP, the judge, and the oracle."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

import openai
import pytest

from om2w_tui.offline import ORACLE_MODES, SITE_NAMES, TASKS_TEMPLATE, OfflineSuite, OracleServer, judge_answer
from om2w_tui.offline.agent_request import AgentRequest, current_url, parse_elements
from om2w_tui.offline.oracle import parse_mode
from om2w_tui.offline.player import GIVE_UP_AT_STEP
from om2w_tui.offline.sites.booking import booking_reference
from om2w_tui.offline.suite import load_task_templates
from tests.unit.agent_requests import (
    AGENT_SCHEMA,
    PRODUCT_STATE,
    SEARCH_TASK,
    SHOP_HOME_STATE,
    TEMPLATES,
    agent_messages,
)

REPO = Path(__file__).resolve().parents[2]
TASK_KEYS = {"task_id", "confirmed_task", "website", "level", "reference_length", "reference_answer", "solution"}
ACTION_NAMES = {"click", "input", "select_dropdown", "scroll", "navigate", "go_back", "send_keys", "done",
                "drag"}   # drag: om2w-tui's own action (episode/tools.py), as the seed's tool set has it
def http_get(url: str, timeout: float = 5.0, opener: urllib.request.OpenerDirector | None = None) -> tuple[int, str]:
    try:
        with (opener or urllib.request.build_opener()).open(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def http_post_json(url: str, payload: object) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def in_background(call, *args) -> threading.Thread:
    """Run call(*args) in a daemon thread; its failure (the server going away) is expected, not reported."""
    def quietly() -> None:
        try:
            call(*args)
        except Exception:
            pass

    thread = threading.Thread(target=quietly, daemon=True)
    thread.start()
    time.sleep(0.2)  # let the request reach the server
    return thread


# ------------------------------------------------------------------------------------------------ tasks


def test_tasks_json_has_the_online_mind2web_shape_and_covers_levels_and_sites():
    assert TASKS_TEMPLATE.name == "tasks.json" and TASKS_TEMPLATE.is_file()
    assert len(TEMPLATES) >= 12
    ids = [t["task_id"] for t in TEMPLATES]
    assert len(set(ids)) == len(ids)
    for task in TEMPLATES:
        assert set(task) == TASK_KEYS, task["task_id"]
        assert re.fullmatch(r"[a-z0-9_]+", task["task_id"])
        assert task["level"] in {"easy", "medium", "hard"}
        assert re.fullmatch(r"\{(shop|wiki|booking|longpage|studio)\}/.*", task["website"])
        assert isinstance(task["reference_length"], int) and task["reference_length"] > 0
        assert task["reference_answer"] and all(isinstance(r, str) and r for r in task["reference_answer"])
        assert task["solution"] and all(rule["do"] for rule in task["solution"])
        assert "{" not in task["confirmed_task"] and "http" not in task["confirmed_task"]
    assert {t["level"] for t in TEMPLATES} == {"easy", "medium", "hard"}
    assert {t["website"].split("}")[0].lstrip("{") for t in TEMPLATES} == set(SITE_NAMES)
    # no task text contains another's, so the oracle can tell every task apart
    texts = [t["confirmed_task"] for t in TEMPLATES]
    assert not [(a, b) for a in texts for b in texts if a != b and a in b]


def test_every_solution_uses_browser_use_actions_and_ends_in_a_correct_done():
    for task in TEMPLATES:
        actions = [action for rule in task["solution"] for action in rule["do"]]
        assert all(len(action) == 1 and next(iter(action)) in ACTION_NAMES for action in actions), task["task_id"]
        assert all(len(rule["do"]) <= 4 for rule in task["solution"]), "solutions must fit max_actions_per_step=4"
        answers = [action["done"]["text"] for action in actions if "done" in action]
        assert answers and all(judge_answer(task, answer) for answer in answers), task["task_id"]


def test_booking_reference_is_deterministic():
    first = booking_reference("2025-07-01", "2025-07-04", "standard", 2, "Ada Lovelace", False)
    assert first == booking_reference("2025-07-01", "2025-07-04", "standard", 2, "  ada   lovelace ", False)
    assert first != booking_reference("2025-07-01", "2025-07-04", "standard", 2, "Ada Lovelace", True)
    assert re.fullmatch(r"SEA-[0-9A-F]{6}", first)


# ------------------------------------------------------------------------------------------------ judge


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("The kettle costs $42.50.", True),
        ("the KETTLE costs   $42.50", True),
        ("It is 42.5", False),
        ("", False),
        (None, False),
    ],
)
def test_judge_answer_needs_every_reference_string(answer, expected):
    assert judge_answer({"reference_answer": ["42.50"]}, answer) is expected


def test_judge_answer_normalises_whitespace_and_case_of_all_references():
    task = {"reference_answer": ["Cast Iron  Skillet", "2.3 kg"]}
    assert judge_answer(task, "The cast iron\nskillet weighs 2.3 KG.")
    assert not judge_answer(task, "The cast iron skillet.")
    assert judge_answer({"reference_answer": "SEA-21F211"}, "reference sea-21f211")
    assert not judge_answer({"reference_answer": []}, "anything")


# ------------------------------------------------------------------------------------------------ sites


@pytest.fixture(scope="module")
def suite():
    with OfflineSuite() as running:
        yield running


def test_each_site_has_its_own_port_on_localhost(suite):
    assert set(suite.base_urls) == set(SITE_NAMES)
    ports = {urllib.parse.urlsplit(url).port for url in suite.base_urls.values()}
    assert len(ports) == len(SITE_NAMES)
    assert all(url.startswith("http://127.0.0.1:") for url in suite.base_urls.values())


@pytest.mark.parametrize(
    ("site", "path", "expected"),
    [
        ("shop", "/", "Featured products"),
        ("shop", "/search?q=kettle", "Copper Pour-Over Kettle"),
        ("shop", "/search?category=kitchen&max_price=50&sort=rating",
         "Showing 3 results in Kitchen, under $50, sorted by customer rating."),
        ("shop", "/category/audio", "Pulse ANC Headphones"),
        ("shop", "/product/headphones-pulse", "32 hours"),
        ("shop", "/cart", "Your cart is empty."),
        ("wiki", "/", "Read the guide"),
        ("wiki", "/guide/", "Getting Started"),
        ("wiki", "/guide/getting-started/installation/ports/", "7450"),
        ("wiki", "/guide/reference/changelog/3x/3-2/", "2024-03-18"),
        ("wiki", "/search?q=snapshot+retained", "Snapshots"),
        ("booking", "/", 'id="checkin"'),
        ("booking", "/rooms", "$189.00 per night"),
        ("booking", "/book?checkin=2025-07-01&checkout=2025-07-04&room=standard&guests=2&guest_name=Ada+Lovelace",
         "SEA-21F211"),
        ("longpage", "/", "Gull Point was automated in 1987"),
    ],
)
def test_site_pages_answer_over_http(suite, site, path, expected):
    status, body = http_get(suite.base_urls[site] + path)
    assert status == 200
    assert expected in body
    assert body.startswith("<!DOCTYPE html>")


def test_unknown_pages_and_invalid_bookings_are_errors(suite):
    assert http_get(suite.base_urls["shop"] + "/product/nope")[0] == 404
    assert http_get(suite.base_urls["wiki"] + "/guide/nope/")[0] == 404
    status, body = http_get(suite.base_urls["booking"]
                            + "/book?checkin=2025-07-04&checkout=2025-07-01&room=suite&guests=2&guest_name=X")
    assert status == 400 and "must be after the check-in date" in body


def test_shop_cart_keeps_items_in_a_cookie(suite):
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))
    base = suite.base_urls["shop"]
    for sku in ("lamp-aurora", "notebook-dotgrid"):
        data = urllib.parse.urlencode({"sku": sku, "quantity": "1"}).encode()
        with opener.open(base + "/cart/add", data=data, timeout=5) as response:
            assert response.url.startswith(base + "/cart")
    status, body = http_get(base + "/cart", opener=opener)
    assert status == 200 and "Cart (2)" in body and "$66.75" in body
    assert "Your cart is empty." in http_get(base + "/cart")[1]  # a new visitor has a new cart


def test_tasks_point_at_the_running_sites(suite):
    tasks = suite.tasks()
    assert [t["task_id"] for t in tasks] == [t["task_id"] for t in TEMPLATES]
    for task in tasks:
        assert "{" not in task["website"] and task["solution"] and task["reference_answer"]
        assert http_get(task["website"])[0] == 200


def test_tasks_need_a_started_suite():
    with pytest.raises(RuntimeError):
        OfflineSuite().tasks()


def test_hang_route_never_answers_and_does_not_block_stop():
    running = OfflineSuite().start()
    url = running.base_urls["booking"] + "/hang"
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        urllib.request.urlopen(url, timeout=0.5)
    pending = in_background(http_get, url, 30)
    started = time.monotonic()
    running.stop()
    assert time.monotonic() - started < 2
    pending.join(timeout=3)
    assert not pending.is_alive()
    assert running.base_urls == {}


# ------------------------------------------------------------------------------------------ the request


def test_parse_elements_reads_browser_use_element_lines():
    elements = {e.index: e for e in parse_elements(SHOP_HOME_STATE)}
    assert set(elements) == {24, 1, 2, 26, 28, 3}
    assert elements[2].tag == "input" and elements[2].matches("id=q") and not elements[2].matches("id=quantity")
    assert elements[2].matches("aria-label=Search products")
    assert elements[26].text == "Search" and elements[1].text == "Search"
    assert elements[28].is_new and elements[28].matches({"tag": "a", "text": "cart"})
    assert elements[3].is_new and elements[3].matches("id=quantity")
    assert current_url(SHOP_HOME_STATE) == "http://127.0.0.1:41977/"


def test_agent_request_finds_sections_even_after_a_nudge_message():
    body = {
        "model": "oracle",
        "messages": [
            *agent_messages(SEARCH_TASK["confirmed_task"], PRODUCT_STATE, step=7, vision=True),
            {"role": "user", "content": "PLANNING NUDGE: make a plan."},
        ],
        "response_format": AGENT_SCHEMA,
    }
    request = AgentRequest.from_body(body)
    assert request.task_text == SEARCH_TASK["confirmed_task"]
    assert request.url == "http://127.0.0.1:41977/product/kettle-copper"
    assert (request.step, request.max_steps) == (7, 30)
    assert request.schema_properties == {"evaluation_previous_goal", "memory", "next_goal", "action"}
    assert request.find("id=add-to-cart").index == 99


# ------------------------------------------------------------------------------------------------ oracle


@pytest.fixture(scope="module")
def oracle(suite):
    with OracleServer(suite.tasks()) as server:
        yield server


def client(oracle: OracleServer, timeout: float = 10.0) -> openai.OpenAI:
    return openai.OpenAI(base_url=oracle.url, api_key="x", max_retries=0, timeout=timeout)


def ask(oracle: OracleServer, model: str = "oracle", state: str = SHOP_HOME_STATE, task: str | None = None,
        step: int = 2, vision: bool = False, timeout: float = 10.0, response_format: dict | None = None):
    messages = agent_messages(SEARCH_TASK["confirmed_task"] if task is None else task, state, step, vision)
    return client(oracle, timeout).chat.completions.create(model=model, messages=messages,
                                                           response_format=response_format or AGENT_SCHEMA)


def test_models_lists_every_mode(oracle):
    ids = [model.id for model in client(oracle).models.list()]
    from om2w_tui.protocol.planner import FAMILIES

    # every mode, and the agent arm's specialist families served as adapters of the oracle
    assert ids[0] == "oracle" and set(ids) == set(ORACLE_MODES) | set(FAMILIES)
    assert {"oracle-slow", "oracle-hang", "oracle-500", "oracle-badjson", "oracle-nodone", "oracle-flaky"} <= set(ids)
    assert client(oracle).models.retrieve("oracle-slow-0.5").id == "oracle-slow-0.5"


def test_oracle_replies_with_browser_use_actions(oracle):
    completion = ask(oracle)
    assert completion.object == "chat.completion" and completion.model == "oracle"
    assert completion.choices[0].finish_reason == "stop" and completion.choices[0].message.role == "assistant"
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    reply = json.loads(completion.choices[0].message.content)
    assert set(reply) == {"evaluation_previous_goal", "memory", "next_goal", "action"}  # only what the schema asks for
    assert reply["action"] == [{"input": {"index": 2, "text": "kettle", "clear": True}}, {"click": {"index": 26}}]


def test_oracle_is_stateless_and_reads_vision_requests(oracle):
    first = ask(oracle).choices[0].message.content
    assert ask(oracle).choices[0].message.content == first
    assert ask(oracle, vision=True).choices[0].message.content == first


def test_oracle_answers_with_done_when_the_answer_is_on_the_page(oracle):
    reply = json.loads(ask(oracle, state=PRODUCT_STATE).choices[0].message.content)
    (action,) = reply["action"]
    assert action["done"]["success"] is True
    assert judge_answer(SEARCH_TASK, action["done"]["text"])


def test_oracle_gives_up_on_unknown_tasks_and_scrolls_for_missing_elements(oracle):
    unknown = json.loads(ask(oracle, task="Buy a yacht.").choices[0].message.content)
    assert unknown["action"] == [{"done": {"text": "oracle: unknown task", "success": False}}]
    bare = "Current tab: 2BB6\nTab 2BB6: http://127.0.0.1:41977/ - x\nInteractive elements:\nempty page"
    scroll = [{"scroll": {"down": True, "pages": 1.0}}]
    assert json.loads(ask(oracle, state=bare).choices[0].message.content)["action"] == scroll
    late = json.loads(ask(oracle, state=bare, step=GIVE_UP_AT_STEP).choices[0].message.content)
    assert late["action"][0]["done"]["success"] is False


def test_oracle_counts_calls(oracle):
    before = oracle.calls
    ask(oracle)
    assert oracle.calls == before + 1


def test_unknown_model_is_404_model_not_found(oracle):
    # vLLM's own answer (serving_engine.py `_check_model`), in its nested shape (tests/unit/test_vllm_answers.py
    # has the flat one)
    with pytest.raises(openai.NotFoundError) as raised:
        ask(oracle, model="gpt-17")
    assert raised.value.status_code == 404
    assert raised.value.body == {"message": "The model `gpt-17` does not exist.", "type": "NotFoundError",
                                 "param": "model", "code": 404}
    status, body = http_post_json(oracle.url + "/chat/completions", {"model": "gpt-17", "messages": []})
    assert status == 404 and body["error"]["code"] == 404 and body["error"]["message"]
    assert http_post_json(oracle.url + "/chat/completions", "not an object")[0] == 400


def test_oracle_500_raises_a_server_error(oracle):
    with pytest.raises(openai.InternalServerError):
        ask(oracle, model="oracle-500")


def test_oracle_badjson_sends_content_that_is_not_json(oracle):
    content = ask(oracle, model="oracle-badjson").choices[0].message.content
    with pytest.raises(json.JSONDecodeError):
        json.loads(content)


def test_oracle_nodone_scrolls_where_it_would_finish(oracle):
    reply = json.loads(ask(oracle, model="oracle-nodone", state=PRODUCT_STATE).choices[0].message.content)
    assert reply["action"] == [{"scroll": {"down": True, "pages": 1.0}}]
    normal = json.loads(ask(oracle, model="oracle-nodone").choices[0].message.content)
    assert normal["action"][0]["input"]["text"] == "kettle"  # the rest of the solution plays as usual


def test_oracle_nodone_on_the_last_step_answers_within_its_schema_a_failed_done(oracle):
    """Where only `done` is allowed (browser-use's last step) oracle-nodone says a failed `done` that gives no answer
    (never the solution's); oracle-nodone-unguided, a server without guided decoding, scrolls there outside it."""
    right = json.loads(ask(oracle, state=PRODUCT_STATE).choices[0].message.content)["action"][0]["done"]["text"]
    last = json.loads(ask(oracle, model="oracle-nodone", state=PRODUCT_STATE,
                          response_format=_action_schema("done")).choices[0].message.content)
    ((name, params),) = last["action"][0].items()
    assert name == "done" and params["success"] is False and "only `done` is allowed at step 2" in params["text"]
    assert right not in params["text"] and "scroll" in params["text"]     # what it would have done: a scroll
    unguided = json.loads(ask(oracle, model="oracle-nodone-unguided", state=PRODUCT_STATE,
                              response_format=_action_schema("done")).choices[0].message.content)
    assert unguided["action"] == [{"scroll": {"down": True, "pages": 1.0}}]
    mid = json.loads(ask(oracle, model="oracle-nodone-unguided").choices[0].message.content)
    assert mid["action"][0]["input"]["text"] == "kettle"   # where it may act, it plays as oracle-nodone


def test_oracle_flaky_fails_every_other_request(oracle):
    outcomes = []
    for _ in range(4):
        try:
            ask(oracle, model="oracle-flaky")
            outcomes.append("ok")
        except openai.InternalServerError:
            outcomes.append("500")
    assert outcomes == ["500", "ok", "500", "ok"]


def test_oracle_slow_waits_its_delay(oracle):
    assert parse_mode("oracle-slow").delay == 3.0 and parse_mode("oracle-slow-1.5").delay == 1.5
    assert parse_mode("oracle-fast") is None
    started = time.monotonic()
    reply = ask(oracle, model="oracle-slow-0.4")
    assert time.monotonic() - started >= 0.4
    assert json.loads(reply.choices[0].message.content)["action"]


def test_oracle_hang_times_out_the_client_and_does_not_block_stop(suite):
    server = OracleServer(suite.tasks()).start()
    with pytest.raises(openai.APITimeoutError):
        ask(server, model="oracle-hang", timeout=0.5)
    pending = in_background(ask, server, "oracle-hang")
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 2
    pending.join(timeout=3)
    assert not pending.is_alive()
    assert server.calls == 0  # a hung request is never answered


def test_standalone_oracle_serves_sites_and_model_until_interrupted():
    process = subprocess.Popen([sys.executable, "-m", "om2w_tui.offline.oracle", "--port", "0"], cwd=REPO,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        while not lines or not lines[-1].startswith("Press Ctrl-C"):
            line = process.stdout.readline()
            assert line, process.stderr.read()
            lines.append(line.strip())
        output = "\n".join(lines)
        oracle_url = re.search(r"Oracle \(OpenAI-compatible\): (\S+)", output)[1]
        site_urls = dict(re.findall(r"^\s*(\w+)\s+(http://127\.0\.0\.1:\d+)/$", output, re.MULTILINE))
        assert set(site_urls) == set(SITE_NAMES)
        assert http_get(site_urls["wiki"] + "/guide/")[0] == 200
        models = json.loads(http_get(oracle_url + "/models")[1])
        assert models["object"] == "list"
        first = models["data"][0]   # vLLM's ModelCard
        assert (first["id"], first["object"], first["owned_by"], first["max_model_len"]) == ("oracle", "model", "vllm",
                                                                                           32768)
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0


def test_standalone_oracle_reports_a_busy_port(capsys):
    from om2w_tui.offline.oracle import main

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        assert main(["--port", str(busy.getsockname()[1])]) == 1
    assert "cannot listen on 127.0.0.1:" in capsys.readouterr().err


def _action_schema(*names: str) -> dict:
    """A response_format as browser-use's ChatOpenAI sends it: one object per action (an anyOf when several)."""
    options = [{"type": "object", "properties": {n: {"type": "object"}}, "required": [n]} for n in names]
    items = options[0] if len(options) == 1 else {"anyOf": options}
    return {"type": "json_schema", "json_schema": {"name": "agent_output", "strict": True, "schema": {
        "type": "object", "properties": {"memory": {"type": "string"}, "action": {"type": "array", "items": items}}}}}


def test_the_oracle_answers_within_the_schema_it_is_sent():
    """browser-use's last step allows `done` only: the oracle answers `done`, never an action it was not offered."""
    from om2w_tui.offline.agent_request import schema_actions
    from om2w_tui.offline.oracle import agent_reply

    tasks = load_task_templates()
    task = next(t for t in tasks if t["task_id"] == "offline_shop_cart_05")
    state = ("<user_request>" + task["confirmed_task"] + "</user_request>\n<browser_state>Current tab: AB12\n"
             "Tab AB12: http://shop.example/ - Shop\n</browser_state>\n<step_info>Step 1 maximum: 3</step_info>")
    body = {"model": "oracle", "messages": [{"role": "user", "content": state}]}
    assert schema_actions(_action_schema("done", "click", "scroll")) == {"done", "click", "scroll"}
    free = json.loads(agent_reply(tasks, AgentRequest.from_body({**body, "response_format": _action_schema(
        "done", "click", "scroll", "navigate", "input")})))
    assert "done" not in free["action"][0]                   # mid-script, an action of the solution
    last = json.loads(agent_reply(tasks, AgentRequest.from_body({**body, "response_format": _action_schema("done")})))
    ((name, params),) = last["action"][0].items()
    assert name == "done" and params["success"] is False and "only `done` is allowed at step 1" in params["text"]


def test_oracle_weak_fails_every_third_task_by_its_id_and_plays_the_others_as_the_oracle(oracle, suite):
    from om2w_tui.offline.oracle import WEAK_ANSWER, weak_fails  # its rule and answer only for this test

    tasks = {t["task_id"]: t for t in suite.tasks()}
    failed = sorted(tid for tid, t in tasks.items() if weak_fails(t))
    # a stable rule (sha256 of the id): the same tasks in every process, about a third of the suite
    assert failed == ["offline_booking_reserve_12", "offline_longpage_automated_14", "offline_shop_cart_05"]
    wrong = json.loads(ask(oracle, model="oracle-weak", task=tasks["offline_shop_cart_05"]["confirmed_task"])
                       .choices[0].message.content)
    assert wrong["action"] == [{"done": {"text": WEAK_ANSWER, "success": True}}]
    assert not judge_answer(tasks["offline_shop_cart_05"], WEAK_ANSWER)
    assert ask(oracle, model="oracle-weak").choices[0].message.content == ask(oracle).choices[0].message.content
