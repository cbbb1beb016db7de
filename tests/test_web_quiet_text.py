"""Text that only looks dangerous where it is used (qe/roles/_web_quiet_text.py),
each rule both ways with the real security role on real files (the red-team
side: the neighbour an attacker can reach stays shown):

- a Jinja template made of literals and a form method whose every
  definition returns literal text: noise; a method that formats a value in,
  or request text added to the template, stays;
- ``http://user:pass@...`` in an input's placeholder or a translated
  message: noise; the same string as a setting stays;
- SQL built from a method parameter that every caller fills with quoted
  identifiers: noise; a caller that passes a request value stays;
- a JSONP callback from the request checked by an anchored regex of word
  characters before the response: noise; a pattern with ``.`` or no end
  anchor stays.
"""

from __future__ import annotations

from tests.test_context_raise import found_by_security, needs_bandit
from tests.test_web_quiet import _noise, _shown

FORMS = '''class Form:
    def extra_form_content(self):
        return None


class PriceForm(Form):
    def extra_form_content(self):
        output = ""
        if self.data:
            output = f"""<p>Note {{ not formatted }}</p>"""
        output += """{% from '_helpers.html' import render_field %}{{ render_field(form.x) }}"""
        return output


class ImageForm(Form):
    def extra_form_content(self):
        return """<fieldset>{{ render_field(form.level) }}</fieldset>"""


class UserForm(Form):
    def user_content(self):
        return "<p>" + self.data["name"] + "</p>"
'''

VIEWS = '''from flask import Flask, request
from jinja2 import Environment

from shop.forms import PriceForm, UserForm

app = Flask(__name__)


@app.route("/edit", methods=["POST"])
def edit():
    form = PriceForm(formdata=request.form)
    env = Environment()
    head = """{% from '_helpers.html' import render_button %}"""
    head += form.extra_form_content()
    return env.from_string(head).render(form=form)


@app.route("/user", methods=["POST"])
def user():
    form = UserForm(formdata=request.form)
    return Environment().from_string(form.user_content()).render()


@app.route("/raw", methods=["POST"])
def raw():
    form = PriceForm(formdata=request.form)
    text = form.extra_form_content() + request.form["extra"]
    return Environment().from_string(text).render()
'''


@needs_bandit
def test_a_template_of_literals_and_literal_methods_is_noise_request_text_stays(make_repo):
    repo = make_repo({"shop/__init__.py": "", "shop/forms.py": FORMS, "shop/views.py": VIEWS})
    found = found_by_security(repo)
    _noise(found, "shop/views.py", 15, "template-injection")
    assert _shown(found, "shop/views.py", 21, "template-injection")  # formats data in
    assert _shown(found, "shop/views.py", 28, "template-injection")  # request text added


PROXY = '''from wtforms import Form, StringField
from flask_babel import lazy_gettext as _l

DATABASE_URL = "postgresql://admin:s3cretpw@db:5432/shop"


class ProxyForm(Form):
    proxy = StringField("Proxy", render_kw={"placeholder": "http://user:pass@...:3128"})
    other = StringField("Other", description=_l("socks5://name:pass@host:1080"))
'''


@needs_bandit
def test_a_connection_string_in_a_placeholder_is_noise_a_setting_stays(make_repo):
    repo = make_repo({"shop/forms.py": PROXY})
    found = found_by_security(repo)
    _noise(found, "shop/forms.py", 8, "hardcoded-db-password")
    _noise(found, "shop/forms.py", 9, "hardcoded-db-password")
    assert _shown(found, "shop/forms.py", 4, "hardcoded-db-password")


EXPORT = '''import sqlite3

from flask import Flask, request

app = Flask(__name__)
TYPES = {"int": "INTEGER", "str": "TEXT"}


def _quote_identifier(name):
    return '"' + str(name).replace('"', '""') + '"'


class Export:
    def __init__(self):
        self.db = sqlite3.connect("x.db")

    def update(self, stats):
        columns = []
        columns.append(f'{_quote_identifier("time")} TEXT')
        for key, value in stats.items():
            columns.append(f"{_quote_identifier(key)} {TYPES[type(value).__name__]}")
        self.export("plugin", columns)

    def export(self, plugin, columns):
        quoted = _quote_identifier(plugin)
        query = f"CREATE TABLE {quoted} ({', '.join(columns)});"
        self.db.execute(query)


class Loose:
    def __init__(self):
        self.db = sqlite3.connect("x.db")

    def update(self):
        self.export([request.args["col"]])

    def export(self, columns):
        query = f"CREATE TABLE t ({', '.join(columns)});"
        self.db.execute(query)
'''


@needs_bandit
def test_sql_from_parameters_every_caller_quotes_is_noise_a_request_value_stays(make_repo):
    repo = make_repo({"app.py": EXPORT})
    found = found_by_security(repo)
    _noise(found, "app.py", 26, "sql-injection")
    assert _shown(found, "app.py", 38, "sql-injection")


JSONP = '''import re

from flask import Flask, abort, make_response, request

app = Flask(__name__)


@app.route("/items")
def items():
    rendered = '{"items": []}'
    if "callback" in request.args:
        callback = request.args.get("callback")
        if not re.match(r"^[a-zA-Z_$][\\w$.]*$", callback):
            abort(400)
        rendered = "%s(%s)" % (callback, rendered)
    resp = make_response(rendered, 200)
    origin = request.headers.get("Origin")  # read after the response is made
    resp.headers["Access-Control-Allow-Origin"] = origin or "*"
    return resp


@app.route("/loose")
def loose():
    rendered = '{"items": []}'
    if "callback" in request.args:
        callback = request.args.get("callback")
        if not re.match(r"^[a-zA-Z_$].*$", callback):
            abort(400)
        rendered = "%s(%s)" % (callback, rendered)
    return make_response(rendered, 200)


@app.route("/open")
def open_end():
    rendered = '{"items": []}'
    if "callback" in request.args:
        callback = request.args.get("callback")
        if not re.match(r"^[a-zA-Z_$]+", callback):
            abort(400)
        rendered = "%s(%s)" % (callback, rendered)
    return make_response(rendered, 200)
'''


@needs_bandit
def test_a_jsonp_callback_checked_by_an_anchored_word_regex_is_noise_loose_ones_stay(make_repo):
    repo = make_repo({"app.py": JSONP})
    found = found_by_security(repo)
    _noise(found, "app.py", 16, "reflected-xss")
    assert _shown(found, "app.py", 30, "reflected-xss")  # "." admits markup
    assert _shown(found, "app.py", 41, "reflected-xss")  # no end anchor
