/** Every page the gateway serves outside /api/v1. */
import { confirmEmailPage } from './confirm_email.ts';
import { emojiData } from './emoji.ts';
import { joinPage, joinSubmit } from './join.ts';
import { loginPage, loginSubmit } from './login.ts';
import { exportArchive } from './realm_export.ts';
import { newOrganizationPage, newOrganizationSubmit } from './new_organization.ts';
import type { Page } from './page.ts';
import { digestUnsubscribePage, loginUnsubscribePage, unsubscribePage, welcomeUnsubscribePage } from './unsubscribe.ts';
import { temporaryUpload, userUpload } from './uploads.ts';
import { videoProviderComplete } from './video.ts';
import { bigBlueButtonJoin } from './bigbluebutton.ts';
import { jdenticonAvatar } from './avatars.ts';

export const PAGES: Page[] = [joinPage, joinSubmit, videoProviderComplete, bigBlueButtonJoin, confirmEmailPage, emojiData, newOrganizationPage, newOrganizationSubmit, userUpload, temporaryUpload, unsubscribePage, digestUnsubscribePage, welcomeUnsubscribePage, loginUnsubscribePage, loginPage, loginSubmit, exportArchive, jdenticonAvatar];
