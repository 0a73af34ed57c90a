// Wire types of nutrition-api (/me), taken from its OpenAPI document: src/api/schema.d.ts is
// generated at build time by scripts/gen-api.mjs (`nutrition-api openapi`), so a change of the API
// that the app does not follow fails `npm run typecheck` and `npm run build`.
import type { components, operations } from './schema';

type Schemas = components['schemas'];

export type FastStatus = Schemas['FastStatus'];
export type Protocol = Schemas['Protocol'];
export type Symptoms = Schemas['Symptoms'];
export type Fast = Schemas['Fast'];
export type FastPage = Schemas['FastPage'];
export type Preferences = Schemas['Preferences'];
export type PatchPreferences = Schemas['PatchPreferences'];
/** `GET /me`'s user: auth's user plus the fasting pause and the preferences. */
export type User = Schemas['MeUser'];
export type Session = Schemas['Session'];
export type Me = Schemas['Me'];
export type Pause = Schemas['Pause'];
export type Stats = Schemas['Stats'];
export type SlotCategory = Schemas['MealCategory'];
export type RecipeCategory = Schemas['Category'];
export type Recipe = Schemas['Recipe'];
export type Slot = Schemas['Slot'];
export type SlotIn = Schemas['SlotIn'];
export type TodayPlan = Schemas['TodayPlan'];
export type MealPlan = Schemas['MealPlan'];
export type ConsumeResult = Schemas['Consumed'];
export type UnconsumeResult = Schemas['Unconsumed'];
export type NotificationConfig = Schemas['PushConfig'];
export type NotificationSettings = Schemas['NotificationSettings'];
export type PatchSettings = Schemas['PatchSettings'];
export type TestPushResult = Schemas['TestPushResult'];
export type Suggestions = Schemas['RecipeList'];
export type Device = Schemas['Device'];
export type ApiErrorBody = Schemas['ErrorBody'];
export type PatchFast = Schemas['PatchFast'];
export type Weight = Schemas['Weight'];
export type Weights = Schemas['Weights'];
export type Drink = Schemas['Drink'];
export type WaterDay = Schemas['WaterDay'];
export type ImportReport = Schemas['ImportReport'];
export type Locale = Schemas['Locale'];

// Per-operation shapes (the operationIds of the document), so that the client's calls follow a
// change of an endpoint's answer or body, not only of the named schemas.
type Operations = operations;
type Success<R> = R extends { 200: infer X } ? X : R extends { 201: infer X } ? X : R extends { 204: infer X } ? X : never;
/** The JSON of an operation's success answer; `undefined` when it has none (204). */
export type Ok<O extends keyof Operations> =
  Success<Operations[O]['responses']> extends { content: { 'application/json': infer T } } ? T : undefined;
/** The JSON body an operation takes. */
export type Body<O extends keyof Operations> =
  Operations[O] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
