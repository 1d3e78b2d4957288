/**
 * Copies a value to the clipboard. The Clipboard API needs a secure context (https, or localhost); over
 * plain http elsewhere the value is selected and copied the older way.
 */
import { useState } from 'preact/hooks';

async function copy(value: string, fallbackInput: HTMLInputElement | null): Promise<boolean> {
  if (navigator.clipboard && window.isSecureContext) {
    try {
      await navigator.clipboard.writeText(value);
      return true;
    } catch {
      // Refused (no permission): fall through to the selection.
    }
  }
  if (!fallbackInput) return false;
  fallbackInput.focus();
  fallbackInput.select();
  return document.execCommand('copy');
}

export function CopyButton({
  value,
  label,
  input,
}: {
  value: string;
  label: string;
  input?: () => HTMLInputElement | null;
}) {
  const [status, setStatus] = useState('');
  return (
    <>
      <button
        type="button"
        class="secondary"
        onClick={async () =>
          setStatus(
            (await copy(value, input?.() ?? null)) ? 'Copied' : 'Select the text and copy it yourself',
          )
        }
      >
        {label}
      </button>
      <span class="copy-status" role="status">
        {status}
      </span>
    </>
  );
}
