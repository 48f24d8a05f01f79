/** Command ids of the Larik sessions sidebar. */
export namespace CommandIDs {
  export const show = 'larik:show-sessions';
  export const refresh = 'larik:refresh-sessions';
  export const openInNotebook = 'larik:open-in-notebook';
  export const exportSession = 'larik:export-session';
  export const deleteSession = 'larik:delete-session';
}
