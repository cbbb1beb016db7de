;;; run_fix.el --- Emacs + eglot scenario: QE findings in flymake, a quick fix applied  -*- lexical-binding: t; -*-
;; Run: emacs --batch -l run_fix.el with SQ_PACKAGE, SQ_SERVER, SQ_FILE, SQ_RESULT set.
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

(defun sq-diags ()
  (sort (cl-loop for d in (flymake-diagnostics)
                 for text = (flymake-diagnostic-text d)
                 when (string-prefix-p "superqode" text)
                 collect (list (cons 'line (line-number-at-pos (flymake-diagnostic-beg d)))
                               (cons 'text text)))
        (lambda (a b) (< (alist-get 'line a) (alist-get 'line b)))))

(defun sq-finish (code)
  (with-temp-file (getenv "SQ_RESULT")
    (insert (json-encode (cons (cons 'exit code) sq-result))))
  (ignore-errors (eglot-shutdown (eglot-current-server)))
  (kill-emacs code))

(setq superqode-server-command (list (getenv "SQ_SERVER"))
      superqode-settings '(:roles ["lint_tester"] :fixAllUnsafe t)
      eglot-sync-connect t
      make-backup-files nil
      create-lockfiles nil)
(superqode-eglot-setup)

(condition-case err
    (progn
      (find-file (getenv "SQ_FILE"))
      (python-mode)
      (apply #'eglot--connect (eglot--guess-contact))
      (sq-wait 20 (lambda () (and (eglot-current-server) (bound-and-true-p flymake-mode)))
               "eglot to manage the buffer")
      (sq-step 'server (eglot--project-nickname (eglot-current-server)))
      ;; What reaches the echo area, and the end hook.
      (defvar sq-messages nil)
      (defvar sq-ended nil)
      (advice-add 'message :before
                  (lambda (fmt &rest args)
                    (when fmt (push (apply #'format-message fmt args) sq-messages))))
      (add-hook 'superqode-session-end-functions (lambda (s) (setq sq-ended s)))
      (let ((id (superqode-run-qe)))
        (sq-step 'session id)
        ;; Findings stream in, then the final (verified) set replaces them.
        (sq-wait 60 (lambda ()
                      (flymake-start)
                      (let ((lines (mapcar (lambda (d) (alist-get 'line d)) (sq-diags))))
                        (and (memq 6 lines) (memq 37 lines)
                             (cl-some (lambda (s) (and (equal (plist-get s :sessionId) id)
                                                       (equal (plist-get s :state) "done")))
                                      (append (plist-get (superqode--execute 'superqode.listSessions)
                                                         :sessions) nil)))))
                 "superqode diagnostics on lines 6 and 37"))
      (sq-wait 20 (lambda () sq-ended) "the end of the session to be announced")
      (sq-step 'end-messages (vconcat (cl-remove-if-not
                                      (lambda (m) (string-match-p "SuperQode: session .* ended" m))
                                      (reverse sq-messages))))
      (sq-step 'status superqode-status)
      (sq-step 'diagnostics (vconcat (sq-diags)))
      ;; The quick fix on `import os' (line 6), as M-x eglot-code-actions would.
      (goto-char (point-min))
      (forward-line 5)
      (sq-step 'actions (vconcat (mapcar (lambda (a) (plist-get a :title))
                                         (eglot-code-actions (line-beginning-position)
                                                             (line-end-position) "quickfix"))))
      (eglot-code-actions (line-beginning-position) (line-end-position) "quickfix" t)
      (sq-step 'line6 (buffer-substring-no-properties (line-beginning-position) (line-end-position)))
      (save-buffer)
      (sq-step 'disk-after-fix (with-temp-buffer (insert-file-contents (getenv "SQ_FILE")) (buffer-string)))
      ;; M-x superqode-fix-all: the remaining (F841) fix via workspace/applyEdit.
      (superqode-fix-all)
      (save-buffer)
      (sq-wait 20 (lambda () (flymake-start) (null (sq-diags))) "the fixed findings to go")
      (sq-step 'fixed-all t)
      (sq-finish 0))
  (error (sq-step 'error (error-message-string err))
         (message "scenario failed: %s" (error-message-string err))
         (sq-finish 1)))
