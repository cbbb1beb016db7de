"""Markup in a WTForms widget over the form's own declarations
(qe/noise_widgets.py) is noise: changedetection.io's radio widget and its
table widget build their HTML from the field's name, id and label, literals,
translations and subfields that render themselves. A widget that puts the
field's value (``field.data``, ``_value()``) in the HTML stays shown, and
so does Markup outside a widget. Real bandit, through the whole filter."""

from __future__ import annotations

from superqode_ls.qe.roles.security import SecurityTester
from tests.role_helpers import make_ctx, run_role
from tests.test_noise_idioms import _filtered, _kept, _noise, needs_bandit

WIDGETS = '''from flask_babel import lazy_gettext as _l
from markupsafe import Markup
from wtforms import Field
from wtforms.widgets import html_params


class RadioWidget:
    def __call__(self, field, **kwargs):
        html = ['<div class="group">']
        field_id = kwargs.pop("id", field.id)
        yes_text = getattr(field, "yes_text", _l("Yes"))
        checked = " checked" if field.data is True else ""
        html.append(f'<input type="radio" name="{field.name}" id="{field_id}_t"{checked}>')
        html.append(f"<span>{yes_text}</span>")
        html.append("</div>")
        return Markup("".join(html))


class TableWidget:
    def __call__(self, field, **kwargs):
        html = [f"<table {html_params(**kwargs)}>"]
        hidden = ""
        for subfield in field:
            if subfield.type in ("HiddenField", "CSRFTokenField"):
                hidden += str(subfield)
            else:
                html.append(f"<tr><td>{hidden}{subfield}</td><th>{subfield.label}</th></tr>")
                hidden = ""
        return Markup("".join(html))


class ValueWidget:
    def __call__(self, field, **kwargs):
        return Markup(f'<input name="{field.name}" value="{field.data}">')


class RawValueWidget:
    def __call__(self, field, **kwargs):
        html = [f"<b>{field.label}</b>"]
        html.append(field._value())
        return Markup("".join(html))


def banner(field):
    return Markup(f"<b>{field.label}</b>")
'''


@needs_bandit
def test_markup_in_a_widget_over_declared_text_is_noise_the_fields_value_stays(make_repo):
    repo = make_repo({"app/widgets.py": WIDGETS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    why = "form widget"
    _noise(found, "app/widgets.py", 16, "B704", why)
    _noise(found, "app/widgets.py", 29, "B704", why)
    _kept(found, "app/widgets.py", 34, "B704")  # the field's data in the HTML
    _kept(found, "app/widgets.py", 41, "B704")  # its _value() among the parts
    _kept(found, "app/widgets.py", 45, "B704")  # not a widget's __call__


# OpenOversight's list widget: its own html_tag setting, each subfield
# rendered by calling it, a subfield's label text; the twins put a
# subfield's data in, or an attribute the widget rebinds from the field
LIST_WIDGETS = '''from markupsafe import Markup
from wtforms.widgets.core import ListWidget, html_params


class BootstrapListWidget(ListWidget):
    def __call__(self, field, **kwargs):
        html = [f"<{self.html_tag} {html_params(**kwargs)}>"]
        for subfield in field:
            html.append(f"<li><h6>{subfield.label.text}</h6> {subfield()}</li>")
        html.append(f"</{self.html_tag}>")
        return Markup("".join(html))


class DataListWidget(ListWidget):
    def __call__(self, field, **kwargs):
        html = []
        for subfield in field:
            html.append(f"<li>{subfield.label.text}: {subfield.data}</li>")
        return Markup("".join(html))


class CaptionWidget(ListWidget):
    def __call__(self, field, **kwargs):
        self.caption = field.data
        return Markup(f"<caption>{self.caption}</caption>")
'''


@needs_bandit
def test_a_list_widgets_own_settings_and_subfields_are_declared_text(make_repo):
    repo = make_repo({"app/widgets.py": LIST_WIDGETS})
    found = _filtered(repo, run_role(SecurityTester(), make_ctx(repo)).findings)
    _noise(found, "app/widgets.py", 11, "B704", "form widget")
    _kept(found, "app/widgets.py", 19, "B704")  # a subfield's data
    _kept(found, "app/widgets.py", 25, "B704")  # an attribute rebound from the field
