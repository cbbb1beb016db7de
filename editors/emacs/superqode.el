;;; superqode.el --- SuperQode QE sessions through eglot -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, languages
;; URL: https://github.com/superqode/superqode-ls

;;; Commentary:

;; Registers the SuperQode language server (`superqode-ls') with eglot for
;; Python buffers and adds commands to run a QE session, cancel it, apply all
;; verified fixes and open the Quality Report.  Findings show in flymake
;; (source "superqode"); their fixes are eglot code actions
;; (M-x eglot-code-actions, or `eglot-code-action-quickfix').
;;
;;   (require 'superqode)
;;   (superqode-eglot-setup)            ; then M-x eglot in a Python buffer
;;
;; Settings go to the server as initializationOptions and answer its
;; workspace/configuration requests (section "superqode"); a directory-local
;; `eglot-workspace-configuration' with a :superqode section overrides them.

;;; Code:

(require 'eglot)
(require 'cl-lib)
(require 'project)

(defgroup superqode nil
  "SuperQode quality-engineering sessions."
  :group 'tools
  :prefix "superqode-")

(defcustom superqode-server-command nil
  "Command (a list of strings) that starts superqode-ls.
nil: look for superqode-ls in the project's .venv/bin, $VIRTUAL_ENV/bin
and `exec-path'."
  :type '(choice (const :tag "Find it" nil) (repeat string)))

(defcustom superqode-major-modes '(python-mode python-ts-mode)
  "Major modes whose buffers eglot connects to superqode-ls."
  :type '(repeat symbol))

(defcustom superqode-settings nil
  "The \"superqode\" settings section, as a plist.
Keys: :mode (\"quick\" or \"deep\"), :roles (a vector of role names),
:runOnSave, :lintOnOpen, :lintOnSave, :lintOnType (t or :json-false),
:isolation (\"auto\", \"worktree\", \"snapshot\"), :trustedFolders (a vector
of paths), :provider."
  :type 'plist)

(defcustom superqode-announce-end t
  "Say in the echo area when a session started here ends, with its verdict.
eglot before 1.10 shows no $/progress, so without this a session ends
unseen.  The server's state is polled (superqode.listSessions) every
`superqode-poll-interval' seconds while a session runs."
  :type 'boolean)

(defcustom superqode-poll-interval 1.0
  "Seconds between two looks at a running session (see `superqode-announce-end')."
  :type 'number)

(defvar superqode--last-session nil
  "Id of the last session started from this Emacs.")

(defvar superqode-status ""
  "The last session's state for the mode line, e.g. \"SuperQode: done, conditional\".
Add (:eval superqode-status) to `global-mode-string' to see it.")

(defvar superqode-session-end-functions nil
  "Functions called with the session's plist (from superqode.listSessions)
when a session started from this Emacs ends.")

(defun superqode--find-server ()
  "The superqode-ls command list, or nil."
  (or superqode-server-command
      (let* ((proj (project-current))
             (root (and proj (project-root proj)))
             (venv (getenv "VIRTUAL_ENV"))
             (candidates
              (delq nil (list (and root (expand-file-name ".venv/bin/superqode-ls" root))
                              (and venv (expand-file-name "bin/superqode-ls" venv))
                              (executable-find "superqode-ls")))))
        (cl-loop for c in candidates
                 when (file-executable-p c) return (list c)))))

(defun superqode--contact (&optional _interactive)
  "Eglot contact for superqode-ls; a user error when it is missing."
  (let ((cmd (superqode--find-server)))
    (unless cmd
      (user-error "SuperQode: superqode-ls not found; install it (pip install superqode-ls) \
and set `superqode-server-command' to (\"/path/to/venv/bin/superqode-ls\")"))
    (append cmd (list :initializationOptions (list :superqode (or superqode-settings eglot--{}))))))

;;;###autoload
(defun superqode-eglot-setup ()
  "Make eglot use superqode-ls for `superqode-major-modes'."
  (interactive)
  (add-to-list 'eglot-server-programs (cons superqode-major-modes #'superqode--contact)))

(defun superqode--server ()
  (or (eglot-current-server)
      (user-error "SuperQode: no eglot connection in this buffer (M-x eglot)")))

(defun superqode--execute (command &optional argument)
  "Run the server's COMMAND with ARGUMENT (a plist) and return its result."
  (eglot-execute-command (superqode--server) command
                         (if argument (vector argument) [])))

;;;###autoload
(defun superqode-run-qe (&optional deep this-file roles worker)
  "Run a QE session on the project; DEEP (\\[universal-argument]) in deep mode.
THIS-FILE (two \\[universal-argument]): only the current file, quick mode.
ROLES (a list of role names): those roles only (see `superqode-run-roles');
WORKER: the agent roles' worker for this run (an ACP agent or \"builtin\")."
  (interactive (list (equal current-prefix-arg '(4))
                     (equal current-prefix-arg '(16))))
  (let* ((arg (append (and deep '(:mode "deep"))
                      (and this-file buffer-file-name
                           (list :uri (eglot--path-to-uri buffer-file-name)))
                      (and roles (list :roles (vconcat roles)))
                      (and worker (list :worker worker))))
         (result (superqode--execute 'superqode.runQE arg))
         (id (plist-get result :sessionId)))
    (setq superqode--last-session id)
    (message "SuperQode: session %s started" id)
    (when superqode-announce-end
      (superqode--watch (superqode--server) id))
    id))

;;;###autoload
(defun superqode-run-roles (roles &optional worker)
  "Run a QE session on the project with ROLES, picked with completion.
The server lists the roles (superqode.listRoles): each is annotated with
what it does, or why it cannot run now; the roles a plain run uses are the
default (RET on an empty input).  With \\[universal-argument], also pick
WORKER, who does the agent roles' work: the built-in loop or an ACP agent."
  (interactive (let ((list (superqode--list-roles)))
                 (list (superqode--read-roles list)
                       (and current-prefix-arg (superqode--read-worker list)))))
  (superqode-run-qe nil nil roles worker))

(defun superqode--list-roles ()
  "The server's roles for this buffer's folder (superqode.listRoles)."
  (superqode--execute 'superqode.listRoles
                      (and buffer-file-name (list :uri (eglot--path-to-uri buffer-file-name)))))

(defun superqode--read-worker (list)
  "The agent roles' worker, read from LIST's ACP agents and \"builtin\"."
  (let ((current (or (plist-get list :worker) "builtin")))
    (completing-read (format "Agent roles' worker (default %s): " current)
                     (cons "builtin" (mapcar (lambda (a) (plist-get a :name))
                                             (append (plist-get list :agents) nil)))
                     nil t nil nil current)))

(defun superqode--read-roles (&optional list)
  "Role names read with `completing-read-multiple' from LIST (the server's)."
  (let* ((list (or list (superqode--list-roles)))
         (roles (append (plist-get list :roles) nil))
         (names (mapcar (lambda (r) (plist-get r :name)) roles))
         (defaults (mapcar (lambda (r) (plist-get r :name))
                           (cl-remove-if-not (lambda (r) (eq (plist-get r :default) t)) roles)))
         (completion-extra-properties
          (list :annotation-function
                (lambda (name)
                  (let ((r (cl-find name roles :key (lambda (r) (plist-get r :name))
                                    :test #'equal)))
                    (when r
                      (concat "  " (if (eq (plist-get r :canRun) t)
                                       (plist-get r :description)
                                     (format "cannot run now: %s" (plist-get r :reason)))))))))
         (picked (completing-read-multiple
                  (format "SuperQode roles (default %s): " (string-join defaults ","))
                  names nil t nil nil (string-join defaults ","))))
    (or picked (user-error "SuperQode: no role picked"))))

(defun superqode--end-line (s)
  "The end of session S (a plist) in one line: findings, fixes and verdict.
The server's own words when it gives them (`:end'): the same counts as its
report and its end message."
  (let ((said (plist-get s :end))
        (state (plist-get s :state))
        (verdict (plist-get s :verdict))
        (n (plist-get s :findings)))
    (if (stringp said)
        (concat "SuperQode: " said)
      (format "SuperQode: session %s %s: %s finding(s)%s"
              (plist-get s :sessionId)
              (if (equal state "done") "ended" state)
              (if (numberp n) n "?")
              (if (stringp verdict) (concat ", " verdict) "")))))

(defun superqode--ended-p (s)
  "Whether session S (a plist) has ended and said so: a finished run has
its end line (`:end') once the server has counted its fixes."
  (let ((state (plist-get s :state)))
    (or (member state '("cancelled" "failed"))
        (and (equal state "done") (stringp (plist-get s :end))))))

(defun superqode--watch (server id)
  "Poll SERVER until session ID is no longer running, then announce its end."
  (let (timer)
    (setq superqode-status (format "SuperQode: %s running" id))
    (setq timer
          (run-with-timer
           superqode-poll-interval superqode-poll-interval
           (lambda ()
             (if (not (jsonrpc-running-p server))
                 (cancel-timer timer)
               (jsonrpc-async-request
                server :workspace/executeCommand
                (list :command "superqode.listSessions" :arguments [])
                :success-fn
                (lambda (result)
                  (let ((s (cl-find id (append (plist-get result :sessions) nil)
                                    :key (lambda (x) (plist-get x :sessionId)) :test #'equal)))
                    (when (and s (superqode--ended-p s)
                               (memq timer timer-list))
                      (cancel-timer timer)
                      (setq superqode-status (superqode--end-line s))
                      (force-mode-line-update t)
                      (message "%s" superqode-status)
                      (run-hook-with-args 'superqode-session-end-functions s))))
                :error-fn (lambda (&rest _) (cancel-timer timer))
                :timeout-fn #'ignore)))))
    timer))

;;;###autoload
(defun superqode-run-qe-deep ()
  "Run a QE session in deep mode."
  (interactive)
  (superqode-run-qe t))

(defun superqode-cancel (&optional session-id)
  "Cancel SESSION-ID, by default the last session started here."
  (interactive)
  (let ((id (or session-id superqode--last-session
                (user-error "SuperQode: no session started from this Emacs"))))
    (let ((result (superqode--execute 'superqode.cancel (list :sessionId id))))
      (message "SuperQode: session %s %s" id
               (if (eq (plist-get result :cancelled) t) "cancelling" "already finished"))
      result)))

;;;###autoload
(defun superqode-fix-all (&optional everywhere)
  "Apply every verified fix in this file; with prefix EVERYWHERE, in all files.
The edits come back as workspace/applyEdit; asking for them is the consent,
so eglot applies them without a second prompt.  Files it visits for the
edits are left unsaved, and named (\\[save-some-buffers] saves them)."
  (interactive "P")
  (let* ((before (cl-remove-if-not #'buffer-modified-p (buffer-list)))
         ;; Files are named by their path in the workspace, as the server
         ;; names them: two files of one name in two folders stay apart.
         (root (let ((server (eglot-current-server)))
                 (and server (expand-file-name (project-root (eglot--project server))))))
         (eglot-confirm-server-initiated-edits nil)
         (arg (and (not everywhere) buffer-file-name
                   (list :uri (eglot--path-to-uri buffer-file-name))))
         (result (superqode--without-edit-prompt
                  (lambda () (superqode--execute 'superqode.applyAllFixes arg))))
         (unsaved (cl-loop for b in (buffer-list)
                           when (and (buffer-file-name b) (buffer-modified-p b)
                                     (not (memq b before)) (not (get-buffer-window b t)))
                           collect (if (and root (file-in-directory-p (buffer-file-name b) root))
                                       (file-relative-name (buffer-file-name b) root)
                                     (abbreviate-file-name (buffer-file-name b))))))
    (message "SuperQode: %s%s" (superqode--fix-all-line result)
             (if unsaved
                 (format " Unsaved: %s (C-x s saves them)." (mapconcat #'identity (sort unsaved #'string<) ", "))
               ""))
    result))

(defun superqode--without-edit-prompt (fn)
  "Call FN with eglot's \"Server wants to edit\" question answered yes.
eglot 1.9 asks it for an edit to a file no buffer visits even when
`eglot-confirm-server-initiated-edits' is nil; in batch Emacs the question
fails the edit.  Any other question is still asked."
  (let ((ask (symbol-function 'y-or-n-p)))
    (cl-letf (((symbol-function 'y-or-n-p)
               (lambda (prompt &rest rest)
                 (or (string-prefix-p "[eglot] Server wants to edit" prompt)
                     (apply ask prompt rest)))))
      (funcall fn))))

(defun superqode--fix-all-line (result)
  "What Fix All did (RESULT of superqode.applyAllFixes): the count, the
files and what was skipped, when the server says."
  (let* ((n (or (plist-get result :applied) 0))
         (rel (append (plist-get result :relFiles) nil))
         (files (or rel (mapcar #'file-name-nondirectory (append (plist-get result :files) nil))))
         (counts (plist-get result :counts))
         (skipped (append (plist-get result :skipped) nil)))
    (concat (cond ((eq (plist-get result :cancelled) t) "Fix All cancelled; nothing changed")
                  ;; The server's words for the count: the session's end and the report say the same.
                  ((stringp counts) (format "applied %d fix%s (%s)" n (if (= n 1) "" "es") counts))
                  ((= n 1) "applied 1 verified fix")
                  (t (format "applied %d verified fixes" n)))
            (if files (concat " in " (mapconcat #'identity files ", ")) "")
            "."
            (if skipped
                (format " Skipped %d: %s." (length skipped)
                        (mapconcat (lambda (k) (format "%s (%s)"
                                                       (or (plist-get k :rule) (plist-get k :findingId) "?")
                                                       (plist-get k :reason)))
                                   skipped "; "))
              ""))))

(defun superqode-show-report (&optional session-id)
  "Open the Quality Report of SESSION-ID, by default the latest."
  (interactive)
  (let* ((result (superqode--execute 'superqode.showReport
                                     (and session-id (list :sessionId session-id))))
         (uri (plist-get result :uri)))
    (when (and uri (not (eq (plist-get result :shown) t)))
      (find-file (eglot--uri-to-path uri)))
    ;; The report is Markdown: markdown-mode when it is installed.
    (when (and buffer-file-name (string-suffix-p ".md" buffer-file-name)
               (fboundp 'markdown-mode) (not (derived-mode-p 'markdown-mode)))
      (markdown-mode))
    result))

(defun superqode-sessions ()
  "List this project's sessions; pick one to open its report."
  (interactive)
  (let* ((sessions (append (plist-get (superqode--execute 'superqode.listSessions) :sessions) nil))
         (items (mapcar (lambda (s)
                          (cons (format "%s  %s  %s finding(s)"
                                        (plist-get s :sessionId) (plist-get s :state)
                                        (or (plist-get s :findings) "?"))
                                s))
                        sessions)))
    (if (null items)
        (message "SuperQode: no sessions")
      (let ((choice (cdr (assoc (completing-read "SuperQode session: " items nil t) items))))
        (superqode-show-report (plist-get choice :sessionId))))))

(provide 'superqode)
;;; superqode.el ends here
