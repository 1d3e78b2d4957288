/** A key's name and external id, as created and as edited: the limits the API checks (1-200 characters). */
export function KeyIdentityFields({
  idPrefix,
  name,
  externalId,
  onName,
  onExternalId,
  externalLabel,
  externalHelp,
}: {
  idPrefix: string;
  name: string;
  externalId: string;
  onName: (value: string) => void;
  onExternalId: (value: string) => void;
  externalLabel: string;
  externalHelp: string;
}) {
  return (
    <>
      <div class="field">
        <label for={`${idPrefix}-name`}>Name</label>
        <input
          id={`${idPrefix}-name`}
          required
          maxLength={200}
          value={name}
          onInput={(e) => onName(e.currentTarget.value)}
        />
      </div>
      <div class="field">
        <label for={`${idPrefix}-external`}>{externalLabel}</label>
        <input
          id={`${idPrefix}-external`}
          maxLength={200}
          value={externalId}
          onInput={(e) => onExternalId(e.currentTarget.value)}
          aria-describedby={`${idPrefix}-external-help`}
        />
        <p id={`${idPrefix}-external-help`} class="help">
          {externalHelp}
        </p>
      </div>
    </>
  );
}
