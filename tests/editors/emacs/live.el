;;; live.el --- Emacs + eglot: diagnostics on open and save, with no command  -*- lexical-binding: t; -*-
;; The default settings: SQ_FILE (an unused import and a shell=True call)
;; opened, flymake shows F401 and B602 with no command; then SQ_SECOND opened
;; with the server running; a save that adds a third problem (`import sys')
;; shows it. `at' holds each step's time (ms since the start: bench/editors.py).
;; SQ_LSP_CMD (bench only): another server timed the same way (`ruff server'),
;; SQ_LSP_INIT its initializationOptions (JSON), SQ_UNUSED / SQ_SHELL its codes.
;; Run: emacs --batch -l live.el with SQ_PACKAGE, SQ_SERVER, SQ_FILE, SQ_SECOND, SQ_RESULT set.
(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defvar sq-t0 (float-time))
(defvar sq-at nil)
(defun sq-mark (key) (push (cons key (* 1000 (- (float-time) sq-t0))) sq-at))

(defun sq-codes ()
  "The codes flymake shows in this buffer, as (LINE . CODE), sorted."
  (flymake-start)
  (sort (cl-loop for d in (flymake-diagnostics)
                 for text = (flymake-diagnostic-text d)
                 when (string-match "\\[\\([^]]+\\)\\]" text)
                 collect (cons (line-number-at-pos (flymake-diagnostic-beg d)) (match-string 1 text)))
        (lambda (a b) (< (car a) (car b)))))

(defun sq-count (code) (cl-count code (sq-codes) :key #'cdr :test #'equal))

(defun sq-json (codes)
  (vconcat (mapcar (lambda (c) (list (cons 'line (car c)) (cons 'code (cdr c)))) codes)))

(defvar sq-second (expand-file-name (getenv "SQ_SECOND")))  ; before find-file moves default-directory
(defvar sq-unused (or (getenv "SQ_UNUSED") "F401"))
(defvar sq-shell (or (getenv "SQ_SHELL") "B602"))
(defun sq-both () (and (>= (sq-count sq-unused) 1) (>= (sq-count sq-shell) 1)))

(condition-case err
    (progn
      (setq superqode-server-command (list (getenv "SQ_SERVER"))
            eglot-sync-connect t
            make-backup-files nil
            create-lockfiles nil)
      (if-let ((other (getenv "SQ_LSP_CMD")))
          (let ((init (and (getenv "SQ_LSP_INIT")
                           (json-parse-string (getenv "SQ_LSP_INIT") :object-type 'plist))))
            (add-to-list 'eglot-server-programs
                         (cons superqode-major-modes
                               (append (split-string other) (and init (list :initializationOptions init))))))
        (superqode-eglot-setup))
      (find-file (getenv "SQ_FILE"))
      (python-mode)
      (apply #'eglot--connect (eglot--guess-contact))
      (sq-wait 20 (lambda () (and (eglot-current-server) (bound-and-true-p flymake-mode)))
               "eglot to manage the buffer")
      (sq-mark 'attached)
      (sq-wait 60 #'sq-both "F401 and B602 without a command")
      (sq-mark 'on_open)
      (sq-step 'on-open (sq-json (sq-codes)))
      ;; A second file, with the server running: eglot manages it by itself.
      (sq-mark 'open_second)
      (find-file sq-second)
      (python-mode)
      (sq-wait 20 (lambda () (and (eglot-current-server) (bound-and-true-p flymake-mode)))
               "eglot to manage the second buffer")
      (sq-wait 60 #'sq-both "the second file's findings")
      (sq-mark 'on_open_second)
      (sq-step 'on-open-second (sq-json (sq-codes)))
      ;; A save that adds a third problem: an unused `import sys' on line 1.
      (goto-char (point-min))
      (insert "import sys\n")
      (sq-mark 'save)
      (save-buffer)
      (sq-wait 60 (lambda () (>= (sq-count sq-unused) 2)) "the saved third problem")
      (sq-mark 'after_save)
      (sq-step 'after-save (sq-json (sq-codes)))
      (sq-step 'modified (buffer-modified-p))
      (sq-step 'at sq-at)
      (sq-finish 0))
  (error (sq-step 'error (error-message-string err))
         (when (getenv "SQ_DEBUG")
           (ignore-errors
             (with-current-buffer (jsonrpc-events-buffer (eglot-current-server))
               (princ (buffer-substring-no-properties (max (point-min) (- (point-max) 6000)) (point-max))
                      #'external-debugging-output))))
         (sq-step 'at sq-at)
         (sq-finish 1)))
