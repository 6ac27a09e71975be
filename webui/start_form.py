"""The web UI's start form as an operator reads it: how load is offered first, then what applies.

Locust's form leads with "Number of users" and "Ramp up", marked required, and lists the
kit's options alphabetically under "Custom parameters", the rate among sweep fields that
do nothing for the shape running. Its page is a built React bundle with no way to order or
hide a field, so a block of plain inputs of the kit's own goes on top (the form posts every
named input inside it, so they travel with Locust's), Locust's user fields and every field
that does not apply to the chosen shape are hidden, and the mode the block chose (an
arrival rate, or users) picks the shape on the server when the form posts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from flask import jsonify, request

from shapes.constant_rate import ConstantRateShape, positive_rate
from shapes.users import UsersShape

# The form field the block's mode travels in, and its two values.
MODE = "load_mode"
RATE_MODE, USERS_MODE = "rate", "users"
# The shape each mode runs (without --class-picker, where Locust's own picker decides).
MODE_SHAPES = {RATE_MODE: ConstantRateShape, USERS_MODE: UsersShape}
MISSING_RATE = (
    "Arrival rate: set how many arrivals to offer per second (e.g. 10) at the top of the "
    "form; this kit offers arrivals on a schedule, not users"
)
MISSING_USERS = "Users: set how many closed-loop users to run (e.g. 20) at the top of the form"

STYLE = """<style>
.loadkit-start .MuiFormControl-root:has(input[name="userCount"]:not([data-kit])),
.loadkit-start .MuiFormControl-root:has(input[name="spawnRate"]:not([data-kit])) {
  display: none; }
#loadkit-load { order: -1; border: 1px solid rgba(127,127,127,.45); border-radius: 4px;
  padding: 12px 16px 4px; margin: 0; display: flex; flex-direction: column; gap: 12px; }
#loadkit-load legend { padding: 0 6px; font-weight: 600; }
#loadkit-load label { display: flex; flex-direction: column; gap: 4px; font-size: .95em; }
#loadkit-load input, #loadkit-load select { font: inherit; font-size: 1.1em; padding: 8px 10px;
  border: 1px solid rgba(127,127,127,.6); border-radius: 4px; background: transparent;
  color: inherit; }
#loadkit-load select option { color: #1b2430; }
#loadkit-load .loadkit-hint { margin: 0 0 8px; opacity: .75; font-size: .9em; }
#loadkit-load [hidden], #loadkit-load[hidden] { display: none; }
</style>"""

BLOCK = """
<legend>How load is offered</legend>
<label data-kit-part="mode">Offer
  <select name="load_mode" data-kit>
    <option value="rate">arrivals per second: open arrival, on a schedule</option>
    <option value="users">users: closed loop, each waits for its answer</option>
  </select></label>
<div data-kit-mode="rate">
  <label>Arrival rate (arrivals per second)
    <input data-kit data-kit-name="rate" inputmode="decimal" placeholder="e.g. 10"></label>
  <p class="loadkit-hint">Offered on a schedule, whatever the platform answers; change it
  while it runs at <a href="./arrival-rate">/arrival-rate</a>.</p>
</div>
<div data-kit-mode="users">
  <label>Users
    <input data-kit data-kit-name="userCount" inputmode="numeric" placeholder="e.g. 20"></label>
  <label>Users started per second
    <input data-kit data-kit-name="spawnRate" inputmode="decimal" placeholder="e.g. 5"></label>
  <p class="loadkit-hint">Each user sends its next request once its answer is in, so a slower
  platform is offered less (docs/capacity.md).</p>
</div>
"""

# Finds the start form whenever Locust's page draws it (it draws it again after a run),
# adds the block before its Start button, and keeps the fields in step with the mode: an
# input outside the chosen mode has no name, so the form does not post it.
SCRIPT = """<script>
(() => {
  const kit = (window.templateArgs || {}).loadkit_form || {};
  const shapeOf = (form) => {
    const picked = form.querySelector('[name="shapeClass"]');
    if (kit.picker) return picked ? picked.value : "";
    const mode = form.querySelector('select[name="load_mode"]');
    return kit.modes[mode ? mode.value : kit.mode];
  };
  const sync = (form) => {
    const shape = shapeOf(form);
    const block = form.querySelector("#loadkit-load");
    block.querySelector('[data-kit-part="mode"]').hidden = !!kit.picker;
    let shown = 0;
    for (const part of block.querySelectorAll("[data-kit-mode]")) {
      const on = kit.modes[part.dataset.kitMode] === shape;
      part.hidden = !on;
      shown += on;
      for (const input of part.querySelectorAll("[data-kit-name]")) {
        if (on) input.name = input.dataset.kitName; else input.removeAttribute("name");
      }
    }
    block.hidden = !!kit.picker && !shown;
    for (const [field, shapes] of Object.entries(kit.applies)) {
      // Locust's page names a field in camelCase and posts it in snake_case.
      const name = field.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
      const input = form.querySelector(`[name="${name}"]:not([data-kit])`);
      const box = input && input.closest(".MuiFormControl-root, .MuiFormControlLabel-root");
      if (box) box.style.display = shapes.includes(shape) ? "" : "none";
    }
  };
  const adopt = (form) => {
    if (form.querySelector("#loadkit-load")) return sync(form);
    const submit = form.querySelector('button[type="submit"]');
    if (!submit || !form.querySelector('input[name="host"]')) return;
    form.classList.add("loadkit-start");
    const block = document.createElement("fieldset");
    block.id = "loadkit-load";
    block.innerHTML = kit.block;
    block.querySelector('select[name="load_mode"]').value = kit.mode;
    const values = {rate: kit.rate, userCount: kit.users, spawnRate: kit.spawn_rate};
    for (const input of block.querySelectorAll("[data-kit-name]")) {
      input.value = values[input.dataset.kitName] ?? "";
    }
    // After Locust's own fields in the page, so that its inputs of the same name (the users
    // fields, disabled at 0) come first and the block's win; shown first (or right under
    // --class-picker's shape field) by the flex order.
    submit.parentNode.insertBefore(block, submit);
    const picker = form.querySelector('[name="shapeClass"]');
    if (picker) picker.closest(".MuiFormControl-root").style.order = "-2";
    form.addEventListener("change", () => sync(form));
    sync(form);
  };
  const look = () => document.querySelectorAll("form").forEach(adopt);
  new MutationObserver(look).observe(document.documentElement, {childList: true, subtree: true});
  setInterval(look, 300);
})();
</script>"""


def add_start_form(
    web_ui, active_shape: Callable[[], object], applies: Mapping[str, tuple[str, ...]]
) -> None:
    """Give the start form the block and its rules, and run the shape its mode chose.

    ``applies`` names the custom parameters that mean something to some shapes only (the
    shape class names, by field); every other field applies to all of them."""
    environment = web_ui.environment
    picker = bool(web_ui.userclass_picker_is_active)
    options = environment.parsed_options
    web_ui.template_args["loadkit_form"] = {
        "picker": picker,
        "block": BLOCK,
        "modes": {mode: shape.__name__ for mode, shape in MODE_SHAPES.items()},
        "mode": USERS_MODE if type(active_shape()) is UsersShape else RATE_MODE,
        "rate": getattr(options, "rate", None) or "",
        "users": getattr(options, "num_users", None) or "",
        "spawn_rate": getattr(options, "spawn_rate", None) or "",
        "applies": dict(applies),
    }

    @web_ui.app.after_request
    def with_the_block(response):
        """Locust's page, with the block's style and script."""
        if request.path != "/" or response.mimetype != "text/html":
            return response
        page = response.get_data(as_text=True)
        page = page.replace("</head>", STYLE + "</head>", 1)
        page = page.replace("</body>", SCRIPT + "</body>", 1)
        response.set_data(page)
        return response

    @web_ui.app.before_request
    def shape_from_the_form():
        """Run the shape the block's mode names, refusing a start without its number."""
        if request.path != "/swarm" or request.method != "POST":
            return None
        mode = request.form.get(MODE)
        if picker:
            # Locust's own picker sets the shape once this hook has let the form through.
            wanted = request.form.get("shape_class", "")
        elif mode in MODE_SHAPES:
            wanted = MODE_SHAPES[mode].__name__
            shapes = (environment.available_shape_classes or {}).values()
            environment.shape_class = next(s for s in shapes if type(s).__name__ == wanted)
            if mode == USERS_MODE:
                # An earlier test's rate must not follow into users mode, which refuses one.
                options.rate = None
        else:
            wanted = type(active_shape()).__name__
        if wanted == ConstantRateShape.__name__ and positive_rate(request.form.get("rate")) is None:
            return _refusal(MISSING_RATE)
        if wanted == UsersShape.__name__ and _whole(request.form.get("user_count")) < 1:
            return _refusal(MISSING_USERS)
        return None


def _refusal(message: str):
    return jsonify({"success": False, "message": message, "host": request.host_url})


def _whole(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        return 0
