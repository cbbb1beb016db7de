"""Persisting orders and loading settings."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import yaml

DB_PASSWORD = "hunter2-prod-db"
AWS_ACCESS_KEY_ID = "AKIAQ7XKZ3M5VR2N4WHT"


def load_settings(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh)


def receipt_signature(order_id: str) -> str:
    return hashlib.md5(order_id.encode("utf-8")).hexdigest()


def backup(directory: str) -> int:
    return subprocess.call("tar czf backup.tgz " + directory, shell=True)


def save_order(root: Path, order_id: str, payload: str) -> Path:
    path = root / f"{order_id}.{receipt_signature(order_id)}.json"
    path.write_text(payload, encoding="utf-8")
    return path
