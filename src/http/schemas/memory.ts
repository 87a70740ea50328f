// Owns the JSON schemas of the Memory alert operations (spec 4.6; upstream notes 1.11).
import { idString, object } from './common.js';

export const listAlertsSchema = object({}, [], false);
export const dismissAlertSchema = object({ alertId: idString, user: { type: 'string', maxLength: 256 } }, ['alertId'], false);
export const actionAlertSchema = object({ alertId: idString }, ['alertId'], false);
export const getAlertConfigSchema = object({}, [], false);

const window = { type: 'integer', minimum: 1, maximum: 1000 };
const fraction = { type: 'number', minimum: 0, maximum: 1 };

export const updateAlertConfigSchema = {
  ...object(
    {
      enabled: { type: 'boolean' },
      recentWindow: window,
      baselineWindow: window,
      minBaselineDecisions: window,
      minDrop: fraction,
      minZ: { type: 'number', minimum: 0, maximum: 10 },
      highDrop: fraction,
      mediumDrop: fraction,
    },
    [],
    false,
  ),
  minProperties: 1,
};
