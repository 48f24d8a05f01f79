/** Command ids of the Larik sessions sidebar and of provenance navigation. */
export namespace CommandIDs {
  export const show = 'larik:show-sessions';
  export const refresh = 'larik:refresh-sessions';
  export const openInNotebook = 'larik:open-in-notebook';
  export const undoInNotebook = 'larik:undo-in-notebook';
  export const exportSession = 'larik:export-session';
  export const openAsNotebook = 'larik:open-as-notebook';
  export const deleteSession = 'larik:delete-session';
  export const openPrompt = 'larik:open-prompt';
  export const jumpToCells = 'larik:jump-to-cells';
}
