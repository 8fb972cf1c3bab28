"""The studio: three pages that browser-use's index-based actions alone cannot do: a code that only the clipboard
carries, a target drawn on a canvas (no element to index: it takes a click by coordinates, found in the screenshot)
and a list reordered by dragging (pointer events, no other way).
"""

from __future__ import annotations

import base64
from html import escape

from om2w_tui.offline.sites.common import SiteHandler

INVITE_CODE = "ORCA-5531-KITE"
INVITE_DESK = "B-14"
TARGET = {"x": 430, "y": 170, "r": 16, "colour": "#e0201b"}   # on a 600x260 canvas
TARGET_PRIZE = "LUMEN-42"
BOARD_ITEMS = [("tests", "Run the test suite"), ("backup", "Back up the database"), ("deploy", "Deploy the release")]
BOARD_WANTED = "backup,tests,deploy"
BOARD_CONFIRMATION = "CHK-7719"

_INVITE_SCRIPT = """
const code = atob("%s");
const status = document.getElementById("copy-status");
document.getElementById("copy-code").addEventListener("click", async () => {
  try { await navigator.clipboard.writeText(code); status.textContent = "Invite code copied to the clipboard."; }
  catch (e) { status.textContent = "Copy failed: " + e.name; }
});
document.getElementById("paste-code").addEventListener("click", async () => {
  try { document.getElementById("invite-code").value = await navigator.clipboard.readText();
        status.textContent = "Pasted from the clipboard."; }
  catch (e) { status.textContent = "Paste failed: " + e.name; }
});
"""

_TARGET_SCRIPT = """
const board = document.getElementById("board");
const g = board.getContext("2d");
g.fillStyle = "#f2f2ee"; g.fillRect(0, 0, board.width, board.height);
g.strokeStyle = "#c9c9c2";
for (let x = 0; x < board.width; x += 40) { g.beginPath(); g.moveTo(x, 0); g.lineTo(x, board.height); g.stroke(); }
for (let y = 0; y < board.height; y += 40) { g.beginPath(); g.moveTo(0, y); g.lineTo(board.width, y); g.stroke(); }
g.fillStyle = "%(colour)s"; g.beginPath(); g.arc(%(x)d, %(y)d, %(r)d, 0, 2 * Math.PI); g.fill();
// on the window, not the canvas: the canvas carries no listener, so nothing on the page has an index for it
window.addEventListener("click", (e) => {
  const box = board.getBoundingClientRect();
  const x = e.clientX - box.left, y = e.clientY - box.top;
  if (x < 0 || y < 0 || x > box.width || y > box.height) return;
  if (Math.hypot(x - %(x)d, y - %(y)d) <= %(r)d + 4) { location.href = "/target/hit?at=" + Math.round(x) + "," + Math.round(y); }
  else { document.getElementById("result").textContent = "Missed at " + Math.round(x) + ", " + Math.round(y) + "."; }
});
"""

_BOARD_SCRIPT = """
const list = document.getElementById("steps");
const order = document.getElementById("order");
const shown = document.getElementById("current-order");
let dragging = null;
function refresh() {
  const items = [...list.querySelectorAll("li")];
  order.value = items.map((li) => li.dataset.key).join(",");
  shown.textContent = "Current order: " + items.map((li) => li.textContent).join(", ") + ".";
}
list.addEventListener("pointerdown", (e) => { dragging = e.target.closest("li"); e.preventDefault(); });
document.addEventListener("pointerup", (e) => {
  const from = dragging; dragging = null;
  if (!from) return;
  const over = document.elementFromPoint(e.clientX, e.clientY);
  const to = over && over.closest("#steps li");
  if (!to || to === from) return;
  const items = [...list.children];
  if (items.indexOf(from) > items.indexOf(to)) list.insertBefore(from, to); else to.after(from);
  refresh();
});
refresh();
"""


class StudioHandler(SiteHandler):
    NAME = "studio"
    ROUTES = [
        ("GET", r"/", "route_home"),
        ("GET", r"/invite", "route_invite"),
        ("GET", r"/join", "route_join"),
        ("GET", r"/target", "route_target"),
        ("GET", r"/target/hit", "route_target_hit"),
        ("GET", r"/board", "route_board"),
        ("GET", r"/board/save", "route_board_save"),
    ]

    def header(self) -> str:
        return (
            '<header class="site"><a id="home-link" class="brand" href="/">Studio</a></header>'
            '<nav class="main" aria-label="Main"><a id="nav-invite" href="/invite">Team invite</a>'
            '<a id="nav-target" href="/target">Target practice</a><a id="nav-board" href="/board">Release checklist</a></nav>'
        )

    def route_home(self) -> None:
        self.html("Studio", "<h1>Studio</h1><p>Team tools: invites, target practice and the release checklist.</p>")

    def route_invite(self) -> None:
        script = _INVITE_SCRIPT % base64.b64encode(INVITE_CODE.encode()).decode()
        self.html(
            "Team invite - Studio",
            "<h1>Team invite</h1><p>Copy the team's invite code and paste it into the box to join the team. "
            "For safety the code is never shown on screen.</p>"
            '<p><button id="copy-code" type="button">Copy invite code</button> <span id="copy-status" role="status"></span></p>'
            '<form id="join-form" action="/join" method="get"><label for="invite-code">Invite code</label> '
            '<input id="invite-code" name="code" type="text" placeholder="Paste the invite code" autocomplete="off"> '
            '<button id="paste-code" type="button">Paste</button> <button id="join-button" type="submit">Join the team</button></form>'
            f"<script>{script}</script>",
        )

    def route_join(self) -> None:
        code = self.query.get("code", "").strip()
        if code != INVITE_CODE:
            self.html("Team invite - Studio", '<h1>Team invite</h1><p class="error" id="join-error" role="alert">'
                      'That invite code is not valid. Copy it again and paste it.</p><p><a id="back" href="/invite">Back</a></p>', 400)
            return
        self.html("Welcome - Studio", f'<h1>Welcome to the team</h1><p id="welcome">You joined the team. Your desk is {INVITE_DESK}.</p>')

    def route_target(self) -> None:
        self.html(
            "Target practice - Studio",
            "<h1>Target practice</h1><p>Click the red dot on the board to reveal the prize code.</p>"
            '<canvas id="board" width="600" height="260"></canvas><p id="result" role="status"></p>'
            f"<script>{_TARGET_SCRIPT % TARGET}</script>",
        )

    def route_target_hit(self) -> None:
        self.html("Prize - Studio", f'<h1>Hit!</h1><p id="prize">You hit the dot. The prize code is {TARGET_PRIZE}.</p>')

    def route_board(self) -> None:
        items = "".join(f'<li role="option" id="item-{key}" data-key="{key}">{escape(text)}</li>' for key, text in BOARD_ITEMS)
        self.html(
            "Release checklist - Studio",
            "<h1>Release checklist</h1><p>Drag the items into the order they must be done in, then save.</p>"
            f'<ol id="steps" role="listbox" aria-label="Checklist order" style="touch-action:none;user-select:none">{items}</ol>'
            '<p id="current-order"></p><form id="board-form" action="/board/save" method="get">'
            f'<input type="hidden" id="order" name="order" value="{",".join(k for k, _ in BOARD_ITEMS)}">'
            '<button id="save-order" type="submit">Save order</button></form>'
            f"<script>{_BOARD_SCRIPT}</script>",
        )

    def route_board_save(self) -> None:
        if self.query.get("order", "") != BOARD_WANTED:
            self.html("Release checklist - Studio", '<h1>Release checklist</h1><p class="error" id="save-error" role="alert">'
                      'Not saved: the database must be backed up before anything else.</p><p><a id="back" href="/board">Back</a></p>', 400)
            return
        self.html("Saved - Studio", f'<h1>Order saved</h1><p id="saved">The checklist order is saved. Confirmation number {BOARD_CONFIRMATION}.</p>')
