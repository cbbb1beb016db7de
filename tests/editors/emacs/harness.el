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

(defun sq-finish (code)
  (with-temp-file (getenv "SQ_RESULT")
    (insert (json-encode (cons (cons 'exit code) sq-result))))
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (kill-emacs code))

(defun sq-open (roles)
  "Visit SQ_FILE with eglot managing it and SuperQode running ROLES (a vector)."
  (setq superqode-server-command (list (getenv "SQ_SERVER"))
        superqode-settings (list :roles roles)
        eglot-sync-connect t
        make-backup-files nil
        create-lockfiles nil)
  (superqode-eglot-setup)
  (find-file (getenv "SQ_FILE"))
  (python-mode)
  (apply #'eglot--connect (eglot--guess-contact))
  (sq-wait 20 (lambda () (and (eglot-current-server) (bound-and-true-p flymake-mode)))
           "eglot to manage the buffer"))
