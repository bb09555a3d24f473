// adcli's report page (adcli/render/html.py inlines this file): clicking a node shows
// its report row, formulas and notes; the slider replays the backward pass edge by edge.
(function () {
  "use strict";

  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }

  function field(key, value) {
    if (value === null || value === undefined || value === "") return "";
    return '<tr><td class="k">' + esc(key) + "</td><td><pre>" + esc(value) + "</pre></td></tr>";
  }

  function rowHtml(r, notes, symbolic) {
    var flags = "requires_grad=" + (r.requires_grad ? "True" : "False");
    flags += ", is_leaf=" + (r.is_leaf ? "True" : "False");
    if (r.hook_changed) flags += ", changed by a hook";
    if (r.released) flags += ", saved values freed by this pass";
    var grad = r.grad !== null ? r.grad : "None" + (r.grad_reason ? " (" + r.grad_reason + ")" : "");
    var h = '<h3 class="rowname">' + esc(r.name) + "</h3><table>";
    h += field("expression", r.expr && r.expr !== r.name ? r.expr : null);
    h += field("line", r.line);
    h += field("grad_fn", r.grad_fn || "None (a leaf)");
    h += field("backward", r.user_backward);
    h += field("shape", r.shape + (r.dtype !== "float32" ? " " + r.dtype : ""));
    h += field("value", r.value);
    h += field("gradient", r.flowed);
    h += field(".grad", grad);
    h += field("flags", flags);
    h += field("formula", r.formula);
    h += field("gradient formula", r.grad_formula);
    h += field("local rule", r.rule);
    h += "</table>";
    if (!r.formula && !r.grad_formula && !r.rule) {
      h += '<p class="k">' + (symbolic ? "no formula for this node"
        : "formulas: run with --symbolic --html to see them") + "</p>";
    }
    // the notes that name this node (as a whole word: `x` is not in `max`)
    var word = r.name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    var named = new RegExp("(^|[^\\w@.])" + word + "($|[^\\w@])");
    var mine = notes.filter(function (n) { return named.test(n); });
    if (mine.length) {
      h += '<ul class="nodenotes">';
      mine.forEach(function (n) { h += "<li>" + esc(n) + "</li>"; });
      h += "</ul>";
    }
    return h;
  }

  function setUp(sec) {
    var data = JSON.parse(sec.querySelector("script.data").textContent);
    var nodes = sec.querySelectorAll("g.node");
    var edges = sec.querySelectorAll("path.edge");
    var panel = sec.querySelector(".panel");
    var slider = sec.querySelector(".slider");
    var text = sec.querySelector(".steptext");
    var users = {};
    data.edges.forEach(function (e) { users[e[0]] = true; });

    function select(i) {
      nodes.forEach(function (g) { g.classList.toggle("selected", +g.dataset.node === i); });
      sec.querySelectorAll("tr[data-node]").forEach(function (tr) {
        tr.classList.toggle("selected", +tr.dataset.node === i);
      });
      var h = "";
      data.nodes[i].forEach(function (ri) { h += rowHtml(data.rows[ri], data.notes, data.symbolic); });
      panel.innerHTML = h;
    }

    nodes.forEach(function (g) {
      g.addEventListener("click", function () { select(+g.dataset.node); });
      g.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") {
          ev.preventDefault();
          select(+g.dataset.node);
        }
      });
    });
    sec.querySelectorAll("tr[data-node]").forEach(function (tr) {
      tr.addEventListener("click", function () { select(+tr.dataset.node); });
    });

    // step v: the first v edges of the backward pass have carried their gradient,
    // the v-th is the one moving now
    function step(v) {
      var n = data.steps.length;
      var reached = {};
      data.nodes.forEach(function (_, i) { if (!users[i]) reached[i] = true; });
      edges.forEach(function (p) { p.classList.remove("done", "active"); });
      for (var k = 0; k < v; k++) {
        var ei = data.steps[k][0];
        edges[ei].classList.add(k === v - 1 ? "active" : "done");
        reached[data.edges[ei][0]] = true;
        reached[data.edges[ei][1]] = true;
      }
      nodes.forEach(function (g) {
        g.classList.toggle("reached", v > 0 && !!reached[+g.dataset.node]);
      });
      text.textContent = v === 0
        ? "Before the backward pass: " + n + " edges to go. " +
          "Move the slider to follow the gradient edge by edge."
        : "Step " + v + " of " + n + ": " + data.steps[v - 1][1];
    }

    if (slider) {
      slider.addEventListener("input", function () { step(+slider.value); });
      sec.querySelector(".prev").addEventListener("click", function () {
        slider.value = Math.max(0, +slider.value - 1);
        step(+slider.value);
      });
      sec.querySelector(".next").addEventListener("click", function () {
        slider.value = Math.min(+slider.max, +slider.value + 1);
        step(+slider.value);
      });
    }
  }

  document.querySelectorAll("details.report").forEach(setUp);
})();
