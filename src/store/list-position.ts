/** Where a page of a list ordered by creation time, then id, continues: after this item. */
export interface ListPosition {
  /** Creation time, epoch milliseconds. */
  readonly at: number;
  readonly id: string;
}
