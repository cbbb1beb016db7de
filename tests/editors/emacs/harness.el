;;; harness.el --- shared by the Emacs + eglot scenarios  -*- lexical-binding: t; -*-
;; Loads the package from SQ_PACKAGE; `sq-step' records results (written as
;; JSON to SQ_RESULT by the scenario), `sq-wait' waits on a predicate.
(require 'package)
(package-initialize)
(require 'json)
(add-to-list 'load-path (getenv "SQ_PACKAGE"))
(require 'superqode)

(defvar sq-result nil)
(defun sq-step (key value) (push (cons key value) sq-result))

(defun sq-wait (seconds pred what)
  (let ((deadline (+ (float-time) seconds)))
    (while (and (not (funcall pred)) (< (float-time) deadline))
      (accept-process-output nil 0.05))
    (unless (funcall pred) (error "timed out after %ss waiting for %s" seconds what))))
