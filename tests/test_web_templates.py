"""Request text a view renders through a template that prints it
unescaped (reflected XSS), both ways, on real files through the security
role: ``|safe`` and ``{% autoescape false %}`` on request data are shown at
the render call; a plainly printed value, ``|safe`` on a value the request
did not give, and a template name that leaves the project stay quiet."""

from __future__ import annotations

from superqode_ls.qe.roles._web_templates import template_text, unsafe_line
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role

VIEWS = """from django.shortcuts import render


def search(request):
    q = request.GET.get('q', '')
    return render(request, 'app/search.html', {'q': q, 'user': request.user})


def plain(request):
    return render(request, 'app/plain.html', {'q': request.GET.get('q')})


def stored(request):
    return render(request, 'app/search.html', {'q': 'fixed'})


def outside(request):
    return render(request, '../../secret.html', {'q': request.GET['q']})
"""
FLASK = """from flask import Flask, request, render_template
app = Flask(__name__)


@app.route('/hi')
def hi():
    return render_template('hi.html', name=request.args['name'])
"""


def _xss(repo) -> set[tuple[str, int]]:
    out = run_role(SecurityTester(), make_ctx(repo))
    return {(f.file, f.range.start_line) for f in out.findings
            if f.rule_id.split("+")[0] == "reflected-xss"}


def test_safe_and_autoescape_off_on_request_data_are_shown(make_repo):
    repo = make_repo({
        "app/views.py": VIEWS,
        "app/templates/app/search.html": "<p>{{ user.username|safe }}</p>\n<a>{{q|safe}}</a>\n",
        "app/templates/app/plain.html": "<p>{{ q }}</p>\n",
        "web.py": FLASK,
        "templates/hi.html": "{% autoescape false %}\n<h1>Hi {{ name }}</h1>\n{% endautoescape %}\n",
    })
    got = _xss(repo)
    assert ("app/views.py", 6) in got
    assert ("web.py", 7) in got
    assert ("app/views.py", 10) not in got  # printed escaped
    assert ("app/views.py", 14) not in got  # |safe on a value the request did not give
    assert ("app/views.py", 18) not in got  # a name outside the project is not read


def test_lookup_and_lines():
    files = {"pkg/templates/a.html": "x\n{{ v | safe }}\n"}
    assert template_text("pkg/views.py", "a.html", files.get) == ("pkg/templates/a.html",
                                                                 files["pkg/templates/a.html"])
    assert template_text("pkg/views.py", "../a.html", files.get) is None
    assert unsafe_line(files["pkg/templates/a.html"], "v") == 2
    assert unsafe_line("{{ v }}{{ vv|safe }}", "v") is None
    assert unsafe_line("{% autoescape off %}\n\n{{ v }}{% endautoescape %}", "v") == 3
