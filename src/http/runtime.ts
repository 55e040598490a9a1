import type { Logger } from 'pino';
import type { LoadedConfig } from '../config/load.js';
import type { SettingsService } from '../config/settingsService.js';
import type { InferenceEngine } from '../inference/engine.js';
import type { CollectionService } from '../collections/collectionService.js';
import type { PersonService } from '../collections/personService.js';
import type { GalleryImportService } from '../collections/galleryImport.js';
import type { SearchService } from '../collections/searchService.js';
import type { LivenessManager } from '../addons/livenessManager.js';
import type { FaceService } from '../inference/faceService.js';
import type { ModelInfo } from '../inference/modelSummary.js';
import type { DefaultThreshold } from '../models/catalog.js';
import type { MonitorManager } from '../monitors/monitorManager.js';
import type { DetectionProfile } from '../inference/pipeline.js';
import type { ApiKeyStore } from '../auth/apiKeyStore.js';
import type { KioskTokenStore } from '../auth/kioskTokenStore.js';
import type { UserService } from '../users/userService.js';
import type { AuditLog } from '../users/auditLog.js';
import type { OpenedDatabase } from '../store/database.js';
import type { RecentErrors } from './errors.js';
import type { VigilMetrics } from './metrics.js';
import type { ScrapeRunService } from '../scrapers/runService.js';
import type { WorkspaceRepository } from '../workspaces/repository.js';
import type { EventService } from '../events/eventService.js';
import type { PersonTimeline } from '../events/personTimeline.js';
import type { UnknownService } from '../events/unknownService.js';
import type { WebhookService } from '../webhooks/webhookService.js';
import type { GalleryFollower } from '../collections/fleetFollower.js';
import type { CollectionPurger } from '../collections/collectionPurger.js';

export interface HostInfo {
  os: string;
  architecture: string;
  cpu: { model: string; logical_cores: number };
}

/** What the engine reports once loaded. */
export interface Inference {
  engine: InferenceEngine;
  faces: FaceService;
  model: ModelInfo;
  /** Compare's and new collections' default match threshold, and where it came from. */
  defaultThreshold: DefaultThreshold;
  providers: string[];
  availableProviders: string[];
  systemProfile: DetectionProfile;
  search: SearchService;
}

/**
 * Everything the routes use. The HTTP server starts before the models are warm so that /v1/health can
 * say "not_ready"; `inference` is filled in when startup finishes.
 */
export interface Runtime {
  loaded: LoadedConfig;
  /** The running settings and their changes (GET/PATCH /v1/settings, SIGHUP). */
  settings: SettingsService;
  log: Logger;
  db: OpenedDatabase;
  keys: ApiKeyStore;
  /** Preview-only kiosk tokens. */
  kiosk: KioskTokenStore;
  /** User accounts with roles and their browser sessions (this box's SQLite, also in fleet mode). */
  users: UserService;
  /** Who did what: every audited operation (RouteSpec.audit) and the CLI commands that write. */
  audit: AuditLog;
  recentErrors: RecentErrors;
  /** The Prometheus registry behind GET /metrics (absent in tests that build a bare runtime). */
  metrics?: VigilMetrics;
  host: HostInfo;
  inference: Inference | null;
  collections: CollectionService;
  persons: PersonService;
  galleryImport: GalleryImportService;
  liveness: LivenessManager;
  monitors: MonitorManager;
  startedAt: Date;
  workspaces: WorkspaceRepository;
  scrapes: ScrapeRunService;
  /** The durable event history and its outputs' status. */
  events: EventService;
  /** Unknown visitors grouped from the monitors' unknown tracks (issue 42). */
  unknowns: UnknownService;
  /** Where and when a person was seen, from the event history. */
  timeline: PersonTimeline;
  webhooks: WebhookService;
  /** Fleet mode ([store] backend = "postgres"): this box's name and its follower of the shared gallery. */
  /** schemaVersion: the fleet database's, as this box migrated or found it at start (null: unreachable then). */
  fleet?: { boxId: string; follower: GalleryFollower; schemaVersion: number | null } | null;
  /** Collections deleted in the background whose rows are still being deleted. */
  purges?: CollectionPurger;
}
