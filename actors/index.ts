/**
 * Every actor kind, registered by importing it. An actor node imports this
 * file once; adding a kind adds its line here and touches no runtime file.
 */
import './realm/actor.ts';
import './user/actor.ts';
import './queue/actor.ts';
import './ephemeral/actor.ts';
import './directory/actor.ts';
