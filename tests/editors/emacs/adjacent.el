;;; adjacent.el --- Emacs + eglot: a quick fix that removes a line keeps the finding below it  -*- lexical-binding: t; -*-
;; shop/storage.py with an unused import planted right above `import subprocess'
;; (B404) and right above the hard-coded password (B105): after each F401 fix
;; flymake still shows every other finding, on its moved line.
;; Run: emacs --batch -l adjacent.el with SQ_PACKAGE, SQ_SERVER, SQ_FILE, SQ_RESULT set.
(load (expand-file-name "harness.el" (file-name-directory load-file-name)) nil t)

(defun sq-diags ()
  "superqode's flymake diagnostics as (LINE . TEXT), sorted."
  (flymake-start)
  (sort (cl-loop for d in (flymake-diagnostics)
                 for text = (flymake-diagnostic-text d)
                 when (string-prefix-p "superqode" text)
                 collect (cons (line-number-at-pos (flymake-diagnostic-beg d)) text))
        (lambda (a b) (or (< (car a) (car b))
                          (and (= (car a) (car b)) (string< (cdr a) (cdr b)))))))

(defun sq-json (diags)
  (vconcat (mapcar (lambda (d) (list (cons 'line (car d)) (cons 'text (cdr d)))) diags)))

(defun sq-fix-f401 (name)
  "Apply the F401 quick fix of `import NAME', save, wait for its finding to go."
  (goto-char (point-min))
  (re-search-forward (concat "^import " name "$"))
  (let* ((actions (eglot-code-actions (line-beginning-position) (line-end-position) "quickfix"))
         (fix (cl-find-if (lambda (a) (string-match-p (regexp-quote (format "(F401): Remove unused import: `%s`" name))
                                                      (plist-get a :title)))
                          actions))
         (eglot-confirm-server-initiated-edits nil))
    (unless fix (error "no F401 fix for %s among %S" name (mapcar (lambda (a) (plist-get a :title)) actions)))
    (if (plist-get fix :edit)
        (eglot--apply-workspace-edit (plist-get fix :edit))
      (let ((cmd (plist-get fix :command)))
        (eglot-execute-command (eglot-current-server) (intern (plist-get cmd :command))
                               (plist-get cmd :arguments)))))
  (save-buffer)
  (sq-wait 20 (lambda () (not (cl-some (lambda (d) (string-match-p (format "`%s` imported" name) (cdr d)))
                                       (sq-diags))))
           (format "the F401 finding of %s to go" name))
  ;; A wrongly dropped neighbour would be gone by now.
  (let ((end (+ (float-time) 0.5))) (while (< (float-time) end) (accept-process-output nil 0.05))))

(condition-case err
    (progn
      (sq-open ["lint_tester" "security_tester"])
      (defvar sq-ended nil)
      (add-hook 'superqode-session-end-functions (lambda (s) (setq sq-ended s)))
      (superqode-run-qe)
      (sq-wait 90 (lambda () sq-ended) "the end of the session")
      (sq-wait 20 (lambda () (= 2 (cl-count-if (lambda (d) (string-match-p "\\[F401\\]" (cdr d)))
                                               (sq-diags))))
               "both planted F401 findings")
      (sq-step 'before (sq-json (sq-diags)))
      (sq-fix-f401 "sys")
      (sq-step 'after-sys (sq-json (sq-diags)))
      (sq-fix-f401 "os")
      (sq-step 'after-os (sq-json (sq-diags)))
      (sq-finish 0))
  (error (sq-step 'error (error-message-string err))
         (message "scenario failed: %s" (error-message-string err))
         (sq-finish 1)))
