// Wire types of nutrition-api (/me). Kept in one file so that the generated OpenAPI types can
// replace it; field names follow the contract exactly.

export type FastStatus = 'IN_PROGRESS' | 'COMPLETED' | 'ENDED_EARLY';

export interface Symptoms {
  headache?: boolean;
  energy?: number;
  hunger?: number;
  clarity?: number;
  note?: string;
}

export interface Fast {
  id: string;
  status: FastStatus;
  protocol: string;
  startedAt: string;
  plannedEndAt: string;
  endedAt: string | null;
  notifiedMilestones: string[];
  symptoms: Symptoms | null;
  autoStarted: boolean;
}

export interface FastPage {
  items: Fast[];
  nextBefore: string | null;
}

export interface Preferences {
  fastingProtocol: string | null;
  fastingMilestones: boolean;
}

export interface User {
  id: string;
  name: string;
  email: string;
  emailVerified: boolean;
  image: string | null;
  createdAt: string;
  updatedAt: string;
  fastingPausedUntil: string | null;
  preferences: Preferences;
}

export interface Session {
  id: string;
  userId: string;
  expiresAt: string;
  createdAt: string;
  updatedAt: string;
  ipAddress: string | null;
  userAgent: string | null;
}

export interface Me {
  user: User;
  session: Session;
}

export interface Pause {
  fastingPausedUntil: string | null;
  paused: boolean;
}

export interface Stats {
  weeklyHours: number;
  monthlyHours: number;
  currentStreak: number;
  longestStreak: number;
  completionRate: number;
  totalSessions: number;
  completedSessions: number;
}

export type SlotCategory = 'COL' | 'PRA' | 'SPU' | 'CENA';

export interface Recipe {
  id: string;
  name: string;
  category: 'COLAZIONE' | 'PRANZO' | 'SPUNTINO' | 'CENA';
  kcal: number;
  prepMinutes: number;
  proteinG: number;
  carbsG: number;
  fatG: number;
  fibreG: number;
  sugarsG: number;
  tags: string[];
  ingredients: { id: string; name: string; grams: number; fdcId: number }[];
  description: string;
}

export interface Slot {
  id: string;
  date: string;
  category: SlotCategory;
  recipe: Recipe | null;
  title: string | null;
  consumed: boolean;
  consumedAt: string | null;
}

export interface TodayPlan {
  date: string;
  planId: string | null;
  intermittentFasting: boolean;
  slots: Slot[];
}

export interface ConsumeResult {
  slot: Slot;
  autoStartedFast: { id: string } | null;
}

export interface NotificationConfig {
  pushEnabled: boolean;
  vapidPublicKey: string | null;
}

export interface NotificationSettings {
  mealReminders: boolean;
  weeklyWeighIn: boolean;
}

export interface TestPushResult {
  sent: number;
  removed: number;
  failed: number;
}

export interface Suggestions {
  recipes: Recipe[];
}

export interface ApiErrorBody {
  code: string;
  message: string;
}
