"""Markup over text already made safe (qe/rendered.py): Django's SafeString
over an f-string of escaped values and of a helper's own SafeString, and
over a number's text, is noise; a raw value inside stays. Real bandit."""

from __future__ import annotations

import pytest

from superqode_ls.qe.roles.base import tool_path
from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _filtered

needs_bandit = pytest.mark.skipif(tool_path("bandit") is None, reason="bandit not installed")

HELPERS = '''from django.utils.html import escape
from django.utils.safestring import SafeString


def iconify(text):
    domain = text + ".com"
    return SafeString(f'<img src="https://icons.example/{escape(domain)}.ico">')


def urldisplay(url):
    return SafeString(f"<a href='{escape(url)}'>{iconify(url)}</a>")


def percent(start, end):
    change = int(round(100 * abs(end - start) / max(start, 1)))
    return SafeString(str(change) + "%")


def raw(url):
    return SafeString(f"<a href='{url}'>{iconify(url)}</a>")
'''


@needs_bandit
def test_safestring_over_escaped_or_numeric_text_is_noise_a_raw_value_stays(make_repo):
    repo = make_repo({"dash/templatetags/helpers.py": HELPERS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    by_line = {f.range.start_line: f for f in found
               if f.file == "dash/templatetags/helpers.py" and f.range}
    for line in (7, 11, 16):
        assert by_line[line].noise and "Markup on safe text" in by_line[line].noise, by_line[line]
    assert by_line[20].noise is None, by_line[20].noise


CURL = '''from django.template import Context, Template

curl_template = """curl {% if method %}-X {{ method }}{% endif %} '{{ body }}' {{ url }}"""
page_template = """<p>{{ body }}</p>"""


def curl_cmd(url, method, body):
    t = Template(curl_template)
    return t.render(Context({"url": url, "method": method, "body": body}, autoescape=False))


def page(body):
    t = Template(page_template)
    return t.render(Context({"body": body}, autoescape=False))
'''


@needs_bandit
def test_autoescape_off_over_a_plain_text_template_is_noise_over_html_it_stays(make_repo):
    """django-silk renders a curl command and test code with autoescape off:
    no HTML, nothing to escape. The same over a template with markup stays."""
    repo = make_repo({"silk/code_generation/curl.py": CURL, "silk/__init__.py": ""})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    hits = {f.range.start_line: f for f in found if f.file == "silk/code_generation/curl.py"
            and f.range and f.rule_id == "template-autoescape-off"}
    assert hits[9].noise and "plain text with no HTML" in hits[9].noise, hits[9]
    assert hits[14].noise is None, hits[14].noise


FILTERS = '''from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe


def _no_op(x):
    return x


def _esc_func(autoescape):
    if autoescape:
        return conditional_escape
    return _no_op


def _never(flag):
    return _no_op


def spacify(value, autoescape=None):
    esc = _esc_func(autoescape)
    val = esc(value).replace(" ", "&nbsp;")
    return mark_safe(val)


def tabify(value, autoescape=None):
    if autoescape:
        esc = conditional_escape
    else:
        esc = lambda x: x
    return mark_safe(esc(value).replace("\\t", "    "))


def raw(value, autoescape=None):
    esc = _never(autoescape)
    return mark_safe(esc(value))


def chosen(value, flag=None):
    esc = conditional_escape if flag else _no_op
    return mark_safe(esc(value))
'''


@needs_bandit
def test_mark_safe_over_the_escaper_autoescape_picks_is_noise_a_no_op_stays(make_repo):
    """django-silk's ``spacify``: ``esc = _esc_func(autoescape)`` gives
    ``conditional_escape``, or no change where the template turned
    autoescaping off (Django's own filter pattern): the text is escaped.
    A helper that never escapes, or a pick made from anything but the
    ``autoescape`` flag, keeps the finding."""
    repo = make_repo({"silk/templatetags/filters.py": FILTERS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    by_line = {f.range.start_line: f for f in found
               if f.file == "silk/templatetags/filters.py" and f.range}
    for line in (22, 30):
        assert by_line[line].noise and "Markup on safe text" in by_line[line].noise, by_line[line]
    for line in (35, 40):
        assert by_line[line].noise is None, by_line[line].noise


FORMATTERS = '''from markupsafe import Markup, escape
from flask import url_for
from wtforms.widgets import html_params


def grid_formatter(view, value):
    return Markup(
        ('<a href="%(url)s" target="_blank">' +
         '<i class="icon-file"></i>%(name)s' +
         '</a> %(size)dk') %
        {
            'url': view.get_url('.api_file_view', id=value.grid_id),
            'name': escape(value.name),
            'size': value.length // 1024,
        })


def field(value, **kwargs):
    return Markup('<input %s><a href="%s">x</a>' % (html_params(**kwargs), url_for('.edit')))


def raw_name(view, value):
    return Markup(
        ('<a href="%(url)s">' + '%(name)s</a>') %
        {'url': view.get_url('.api_file_view'), 'name': value.name})


def raw_url(view, value):
    return Markup('<a href="%s">x</a>' % view.get_url(value.endpoint))


def doubled(value):
    return Markup('<b>%s</b>' % (value.name * 2))
'''


@needs_bandit
def test_markup_over_escaped_values_urls_and_html_params_is_noise_a_raw_value_stays(make_repo):
    """flask-admin's formatters: literals joined by ``+`` and filled from a
    dict of ``escape()``d values, a number and ``view.get_url('.endpoint')``;
    ``html_params()`` and ``url_for()``: the text is escaped or a routed URL.
    A raw attribute among them, an endpoint the value picks, or text
    repeated by ``*`` keeps the finding."""
    repo = make_repo({"admin/typefmt.py": FORMATTERS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    by_line = {f.range.start_line: f for f in found if f.file == "admin/typefmt.py" and f.range}
    for line in (7, 19):
        assert by_line[line].noise and "Markup on safe text" in by_line[line].noise, by_line[line]
    for line in (23, 29, 33):
        assert by_line[line].noise is None, by_line[line].noise


# changedetection.io's shapes: the error text re-escaped before it is marked
# (only the last assignment reaches the call), a list of escaped parts and
# links joined through ``str(part) for part in parts``; the raw twins stay.
WATCH = '''from flask import url_for
from markupsafe import Markup, escape


class Watch(dict):
    def errors(self, safe_jinja, has_proxies):
        output = []
        last_error = self.get("last_error", "")
        if last_error:
            last_error = safe_jinja.render_fully_escaped(last_error)
            if has_proxies:
                output.append(str(Markup(f"{last_error} - <a href=\\"{url_for('s', uuid=self.get('uuid'))}\\">x</a>")))
        return output

    def raw_errors(self):
        last_error = self.get("last_error", "")
        if last_error:
            note = last_error
            last_error = note.strip()
            return Markup(f"{last_error} - <b>!</b>")

    def looped(self, items):
        text = escape(self.get("t", ""))
        for item in items:
            out = Markup(f"<p>{text}</p>")
            text = item
        return out


def linkify(body, matches):
    result = []
    for url in matches:
        result.append(Markup(f'<a href="{escape(url)}">{escape(url)}</a>'))
    result.append(escape(body))
    return str(Markup("".join(str(part) for part in result)))


def linkify_raw(body, matches):
    result = [escape(body)]
    for url in matches:
        result.append(url)
    return str(Markup("".join(str(part) for part in result)))
'''


@needs_bandit
def test_markup_over_reescaped_text_and_joined_escaped_parts_is_noise_raw_twins_stay(make_repo):
    repo = make_repo({"app/model.py": WATCH})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    by_line = {f.range.start_line: f for f in found if f.file == "app/model.py" and f.range
               and f.rule_id == "B704"}
    for line in (12, 35):
        assert by_line[line].noise and "Markup on safe text" in by_line[line].noise, by_line[line]
    # the text reassigned from a raw value, a loop that rebinds it, raw list items: stay
    for line in (20, 25, 42):
        assert by_line[line].noise is None, (line, by_line[line].noise)
