/** Any JSON value: what a message's free-form fields (a cell, its metadata, outputs) hold. */
export type Json = string | number | boolean | null | Json[] | JsonObject;

/** A JSON object. */
export interface JsonObject {
  [key: string]: Json;
}
