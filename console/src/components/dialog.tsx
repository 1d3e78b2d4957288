/**
 * A modal dialog on the platform's <dialog>: the page behind it is inert, Tab and Shift+Tab cycle
 * inside it, Escape closes it, and focus returns to what opened it.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useRef } from 'preact/hooks';
import type { ApiError } from '../api';
import { ErrorMessage } from './error-message';

const FOCUSABLE =
  'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

export interface DialogProps {
  readonly open: boolean;
  readonly title: string;
  readonly onClose: () => void;
  readonly children: ComponentChildren;
}

export function Dialog({ open, title, onClose, children }: DialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<HTMLElement | null>(null);
  const titleId = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
      dialog.showModal();
    } else if (!open && dialog.open) {
      dialog.close();
    }
  }, [open]);
  // Unmounted while open (its page closes it by no longer rendering it): closed before the node goes, so
  // the page behind is no longer inert when the opener takes the focus back. That close event is not
  // passed on: the page already knows.
  const unmounted = useRef(false);
  useEffect(() => {
    const dialog = ref.current;
    return () => {
      unmounted.current = true;
      if (dialog?.open) dialog.close();
      opener.current?.focus();
    };
  }, []);

  const trapTab = (event: KeyboardEvent) => {
    if (event.key !== 'Tab' || !ref.current) return;
    const focusable = [...ref.current.querySelectorAll<HTMLElement>(FOCUSABLE)];
    const first = focusable[0];
    const last = focusable[focusable.length - 1];
    if (!first || !last) return;
    if (event.shiftKey && document.activeElement === first) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  };

  return (
    <dialog
      ref={ref}
      aria-labelledby={titleId}
      onKeyDown={trapTab}
      onClose={() => {
        if (unmounted.current) return;
        onClose();
        if (opener.current?.isConnected) opener.current.focus();
      }}
    >
      <h2 id={titleId}>{title}</h2>
      {children}
    </dialog>
  );
}

/**
 * A dialog's last row: the API's error if the action failed, its action buttons, and Cancel. A
 * destructive dialog opens with the focus on Cancel: Enter, Enter must never destroy anything.
 */
export function DialogButtons({
  error,
  onCancel,
  destructive = false,
  children,
}: {
  error: ApiError | undefined;
  onCancel: () => void;
  destructive?: boolean;
  children: ComponentChildren;
}) {
  return (
    <>
      <ErrorMessage error={error} />
      <div class="dialog-buttons">
        {children}
        <button type="button" class="secondary" autofocus={destructive} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </>
  );
}
