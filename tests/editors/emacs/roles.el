;;; roles.el --- Emacs + eglot scenario: M-x superqode-run-roles  -*- lexical-binding: t; -*-
;; The roles are read with completing-read-multiple from superqode.listRoles
;; (annotated with what each does or why it cannot run); the default is what
;; a plain run uses; the session runs exactly the roles picked.
;; Run: emacs --batch -l roles.el with SQ_PACKAGE, SQ_SERVER, SQ_FILE, SQ_RESULT set.
(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(condition-case err
    (progn
      (sq-open ["lint_tester"])
      (let (seen)
        ;; The user types "security_tester" where the prompt offers the roles.
        (cl-letf (((symbol-function 'completing-read-multiple)
                   (lambda (prompt table &rest _)
                     (let ((annotate (plist-get completion-extra-properties :annotation-function)))
                       (setq seen (list prompt
                                        (vconcat table)
                                        (funcall annotate "lint_tester")
                                        (funcall annotate "agent_unit_tester"))))
                     (list "security_tester"))))
          (let ((roles (superqode--read-roles)))
            (sq-step 'picked (vconcat roles))
            (sq-step 'prompt (nth 0 seen))
            (sq-step 'names (nth 1 seen))
            (sq-step 'lint-annotation (nth 2 seen))
            (sq-step 'agent-annotation (nth 3 seen))
            ;; C-u: the worker too, read from the ACP agents (none here) and "builtin".
            (let ((worker (cl-letf (((symbol-function 'completing-read)
                                     (lambda (prompt table &rest _)
                                       (sq-step 'worker-prompt prompt)
                                       (sq-step 'workers (vconcat table))
                                       "builtin")))
                            (superqode--read-worker (superqode--list-roles)))))
              (sq-step 'worker worker)
              (setq roles (list roles worker)))
            (let ((id (apply #'superqode-run-roles roles)))
              (sq-step 'session id)
              (sq-wait 90 (lambda ()
                            (cl-some (lambda (s) (and (equal (plist-get s :sessionId) id)
                                                      (equal (plist-get s :state) "done")))
                                     (append (plist-get (superqode--execute 'superqode.listSessions)
                                                        :sessions) nil)))
                       "the picked session to end")))))
      (sq-finish 0))
  (error (sq-step 'error (error-message-string err))
         (sq-finish 1)))
