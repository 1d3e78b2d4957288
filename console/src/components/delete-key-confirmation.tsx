/** Deleting a key, confirmed in a dialog that opens on Cancel: the console's and the portal's. */
import { useAction } from '../use-api';
import { Dialog, DialogButtons } from './dialog';

export function DeleteKeyConfirmation({
  name,
  remove,
  onDeleted,
  onClose,
}: {
  name: string;
  remove: () => Promise<unknown>;
  onDeleted: () => void;
  onClose: () => void;
}) {
  const action = useAction();
  const confirm = async () => {
    // Whatever the call answers (a message, or nothing), it succeeded once it did not throw.
    const done = await action.run(async () => (await remove(), true));
    if (done) onDeleted();
  };
  return (
    <Dialog open title={`Delete ${name}?`} onClose={onClose}>
      <p>
        Requests with this key are refused at once, on every replica. Its usage stays, counted for its
        consumer. This cannot be undone.
      </p>
      <DialogButtons error={action.error} onCancel={onClose} destructive>
        <button type="button" class="danger" disabled={action.busy} onClick={() => void confirm()}>
          Delete key
        </button>
      </DialogButtons>
    </Dialog>
  );
}
