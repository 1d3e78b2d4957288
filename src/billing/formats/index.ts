import type { ExportType } from '../billing-export.js';
import type { ExportFormat } from '../usage-send.js';
import { cloudEventsFormat } from './cloudevents.js';
import { lagoFormat } from './lago.js';
import { metronomeFormat } from './metronome.js';
import { openMeterFormat } from './openmeter.js';
import { stripeV2Format } from './stripe-v2.js';
import { stripeFormat } from './stripe.js';

/** Each export type's request format. */
export const FORMATS: Readonly<Record<ExportType, ExportFormat>> = {
  stripe: stripeFormat,
  'stripe-v2': stripeV2Format,
  metronome: metronomeFormat,
  openmeter: openMeterFormat,
  lago: lagoFormat,
  cloudevents: cloudEventsFormat,
};
