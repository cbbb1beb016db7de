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
:runOnSave (t or :json-false), :isolation (\"auto\", \"worktree\",
\"snapshot\"), :trustedFolders (a vector of paths), :provider."
  :type 'plist)

(defvar superqode--last-session nil
  "Id of the last session started from this Emacs.")

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
(defun superqode-run-qe (&optional deep this-file)
  "Run a QE session on the project; DEEP (\\[universal-argument]) in deep mode.
THIS-FILE (two \\[universal-argument]): only the current file, quick mode."
  (interactive (list (equal current-prefix-arg '(4))
                     (equal current-prefix-arg '(16))))
  (let* ((arg (append (and deep '(:mode "deep"))
                      (and this-file buffer-file-name
                           (list :uri (eglot--path-to-uri buffer-file-name)))))
         (result (superqode--execute 'superqode.runQE arg))
         (id (plist-get result :sessionId)))
    (setq superqode--last-session id)
    (message "SuperQode: session %s started" id)
    id))

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
so eglot applies them without a second prompt."
  (interactive "P")
  (let* ((eglot-confirm-server-initiated-edits nil)
         (arg (and (not everywhere) buffer-file-name
                   (list :uri (eglot--path-to-uri buffer-file-name))))
         (result (superqode--execute 'superqode.applyAllFixes arg)))
    (message "SuperQode: applied %s fix(es)" (plist-get result :applied))
    result))

(defun superqode-show-report (&optional session-id)
  "Open the Quality Report of SESSION-ID, by default the latest."
  (interactive)
  (let* ((result (superqode--execute 'superqode.showReport
                                     (and session-id (list :sessionId session-id))))
         (uri (plist-get result :uri)))
    (when (and uri (not (eq (plist-get result :shown) t)))
      (find-file (eglot--uri-to-path uri)))
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
