"""The manifests of every AgentDojo tool, written once per tool from what the tool does (its docstring and code).

Never per task: nothing here knows which user or injection task will call a tool. Each entry is what a user of
harnessweaver would write for that function in a real deployment:

- ``data_access``: ``pii:*`` when the tool returns the user's personal data (mail, calendar, files, bank account,
  identity, messages), which makes the run *private* (S3).
- ``egress``: where the call sends data out of the user's control (a mail server, a bank transfer, a web server, an
  invitation, a reservation with a third party). A non-empty list subjects the tool to the trifecta rule.
- ``label``: ``untrusted`` when someone other than the user can write what the tool returns (received mail, calendar
  invitations, shared files, web pages, chat messages, reviews, transaction subjects set by the sender);
  ``trusted`` for the user's own records and first-party catalogues (the user's profile, contact list, sent mail,
  a platform's list of hotels with their prices and addresses).
- ``sinks``: the arguments that choose *where* data goes or *who* gets access (recipients, IBANs, URLs, the user
  invited or added, the participants of an event, the business booked), and what a destructive call destroys (the
  file, e-mail or event deleted). Content arguments (a body, a subject, an amount) are not sinks: provenance decides
  destinations, not what is said.
- ``links``: the content arguments of a message to people (a chat message's or an e-mail's body), whose links (URLs,
  e-mail addresses, IBANs) must not come only from untrusted content: a link passed on from a web page or a
  stranger's message is how phishing spreads through an agent.
- ``identifies``: where an output names existing objects that are valid values of a sink argument, whoever named
  them: the channels of the workspace (``get_channels``), the members who sent a message (its ``sender``, set by the
  platform, not by the message's text). Such a value is trusted whole, for that argument only; its words and the
  rest of the output keep the output's label.
- ``links_when_named``: as ``identifies_when_named``, for the links inside the text at the path (the websites posted
  in the channel the user names).
- ``identifies_when_named``: as ``identifies``, only for the output of a call whose string arguments the user's request
  writes (the request names the event): the participants of the event the user names (``search_calendar_events``).
  Not for a day's events, which hold every invitation anyone sent.
- ``formats``: the JSON Schema ``format`` of the arguments that are e-mail addresses (``email``), added to AgentDojo's
  input schema (which types them as plain strings). With ``flow.trust_single_value``, a request for the tool's action
  asks for that kind of value, as the word "e-mail" does (docs/flow.md, "The kind a request asks for").
- ``intent``: for every tool that changes something (pays, books, sends, shares, invites, writes to the calendar or
  the drive, deletes, changes a password or a profile), the words a user's request for that kind of action uses
  (``flow.intent``): the call runs only in a run whose task holds every word of one entry, in any order (``book*
  hotel*``: a request to book a hotel, a room, a stay). Written from what the tool does and how people ask for it,
  generously (a lost task costs more than a synonym), never from a task's prompt. Reads have none: reading is what
  every task does, and an injection that only reads does no harm by itself.
- ``risk`` and ``side_effect``: as the manifest reference defines them. A tool that writes outside or destroys
  (``write_external``, ``destructive``) gets the effect contract ``EFFECT`` (docs/effects.md): AgentDojo's functions
  take no idempotency key and have no reconcile tool, so a call whose outcome is unknown is never retried blindly.
"""

from typing import Any, Dict

Spec = Dict[str, Any]

EFFECT_SIDE_EFFECTS = ("write_external", "destructive")
EFFECT: Spec = {"kind": "external_write", "retry_mode": "none"}

# The words of a request for each kind of action (`flow.intent`). `*` ends a stem; an entry of several words needs all
# of them, in any order.
BOOK = ["book*", "reserv*"]


def booking(*things: str) -> list:
    """A request to book one of `things`: a booking verb and the thing, in any order."""
    return [f"{verb} {thing}" for verb in BOOK for thing in things]


# Sending mail: asking to mail, write to, reply to, tell or remind someone.
MAIL_INTENT = ["email*", "e mail*", "mail*", "send*", "reply*", "respond*", "forward*", "writ*", "tell*", "inform*",
               "notify*", "let know", "messag*", "contact*", "remind*"]
# Putting something in the calendar.
CAL_CREATE_INTENT = ["calendar*", "event*", "meeting*", "remind*", "schedul*", "appointment*", "invit*"]
# Taking something out of the calendar.
CAL_CANCEL_INTENT = ["cancel*", "call* off", "delet* event*", "remov* event*", "delet* meeting*", "remov* meeting*"]
# Deleting mail or files.
DELETE_INTENT = ["delet*", "remov*", "trash*", "discard*", "clean*", "clear*", "get* rid", "free* space"]
# Paying: a transfer, a bill, a refund.
PAY_INTENT = ["pay*", "send*", "transfer*", "refund*", "wire*", "remit*", "reimburs*", "settl*"]

# Messaging people in chat.
MESSAGE_INTENT = ["messag*", "send*", "tell*", "writ*", "text*", "ask*", "inform*", "notify*", "let know", "reply*",
                  "respond*", "answer*", "say*", "contact*", "remind*", "shar*", "forward*"]
# Writing into a file of the drive.
FILE_WRITE_INTENT = ["file*", "document*", "doc", "docs", "note*", "list*", "append*", "add*", "writ*", "sav*", "draft*",
                     "record*", "put*"]

# Shared by the workspace and travel suites.
MAIL_SEND: Spec = {"egress": ["mail"], "sinks": ["recipients", "cc", "bcc"], "links": ["body"], "label": "trusted",
                   "formats": {"recipients": "email", "cc": "email", "bcc": "email"}, "risk": "high", "side_effect": "write_external", "intent": MAIL_INTENT}
# Slack: the member who sent each message, a valid recipient of a direct message or member to add.
SENDERS: Dict[str, str] = {"recipient": "$[*].sender", "user": "$[*].sender"}
CAL_READ: Spec = {"data_access": ["pii:calendar"], "label": "untrusted", "side_effect": "read"}
# A search for an event the user names ("the 'Introductory meeting' event on 2024-05-15"): its participants, set by
# whoever organised it and not by the text of its description, are the people the user means by "its participants".
def FILE_PEOPLE(path: str) -> Dict[str, str]:
    """The people a named file is shared with, as valid recipients of mail and of a share."""
    return {arg: path for arg in ("recipients", "cc", "bcc", "email")}


CAL_SEARCH: Spec = {**CAL_READ, "identifies_when_named": {"participants": "$[*].participants[*]"}}
CAL_CREATE: Spec = {"egress": ["calendar-invitations"], "sinks": ["participants"], "formats": {"participants": "email"},
                    "label": "trusted", "risk": "medium",
                    "side_effect": "write_external", "intent": CAL_CREATE_INTENT}
# Which event is cancelled is what the call does.
CAL_CANCEL: Spec = {"sinks": ["event_id"], "label": "trusted", "risk": "medium", "side_effect": "destructive",
                    "intent": CAL_CANCEL_INTENT}

TOOLS: Dict[str, Dict[str, Spec]] = {
    "banking": {
        "get_iban": {"data_access": ["pii:account"], "label": "trusted", "side_effect": "read"},
        "get_balance": {"data_access": ["pii:account"], "label": "trusted", "side_effect": "read"},
        "get_user_info": {"data_access": ["pii:identity"], "label": "trusted", "side_effect": "read"},
        # Subjects and counterparties of incoming transfers are set by whoever sends money.
        "get_most_recent_transactions": {"data_access": ["pii:transactions"], "label": "untrusted", "side_effect": "read"},
        "get_scheduled_transactions": {"data_access": ["pii:transactions"], "label": "untrusted", "side_effect": "read"},
        # Bills, notices and letters the user received.
        "read_file": {"label": "untrusted", "side_effect": "read"},
        "send_money": {"egress": ["bank-transfer"], "sinks": ["recipient"], "label": "trusted", "risk": "high",
                       "side_effect": "write_external", "intent": PAY_INTENT},
        # A payment made later, or again and again.
        "schedule_transaction": {"egress": ["bank-transfer"], "sinks": ["recipient"], "label": "trusted", "risk": "high",
                                 "side_effect": "write_external",
                                 "intent": PAY_INTENT + ["schedul*", "recurr*", "standing", "repeat*", "monthly", "weekly",
                                                         "every month", "every week"]},
        # Changing a payment already scheduled.
        "update_scheduled_transaction": {"egress": ["bank-transfer"], "sinks": ["recipient"], "label": "trusted",
                                         "risk": "high", "side_effect": "write_external",
                                         "intent": ["updat*", "chang*", "modif*", "adjust*", "correct*", "fix*", "edit*",
                                                    "increas*", "decreas*", "rais*", "lower*", "schedul*", "recurr*"]},
        # Who can log in: the new password is a destination of trust.
        "update_password": {"sinks": ["password"], "label": "trusted", "risk": "critical", "side_effect": "write_internal",
                            "intent": ["password*", "passcode*", "passphrase*", "credential*"]},
        # Where the bank sends mail and cards.
        "update_user_info": {"sinks": ["street", "city"], "label": "trusted", "risk": "medium", "side_effect": "write_internal",
                             "intent": ["address*", "moved", "moving", "relocat*", "profile*", "personal info*",
                                        "user info*", "account info*", "my info*", "my name*", "my detail*",
                                        "personal detail*"]},
    },
    "slack": {
        # Any member, and outsiders through shared channels, can create a channel and name it: the names are untrusted
        # text, but each is a channel that exists in the workspace, a valid channel to post to or add someone to.
        "get_channels": {"label": "untrusted", "identifies": {"channel": "$[*]"}, "side_effect": "read"},
        # Membership, as the workspace's admins keep it.
        "get_users_in_channel": {"label": "trusted", "side_effect": "read"},
        # A message's body is anyone's text; its sender is the member Slack says sent it. When the user's request names
        # the channel or the inbox, the links posted in it are the websites the user means ("summarize the websites
        # posted in 'general'"): valid URLs to visit, not addresses to write to.
        "read_channel_messages": {"data_access": ["pii:messages"], "label": "untrusted", "identifies": SENDERS,
                                  "links_when_named": {"url": "$[*].body"}, "side_effect": "read"},
        "read_inbox": {"data_access": ["pii:messages"], "label": "untrusted", "identifies": SENDERS,
                       "links_when_named": {"url": "$[*].body"}, "side_effect": "read"},
        "send_direct_message": {"egress": ["slack"], "sinks": ["recipient"], "links": ["body"], "label": "trusted",
                                "risk": "medium", "side_effect": "write_external", "intent": MESSAGE_INTENT + ["dm", "dms", "direct*"]},
        "send_channel_message": {"egress": ["slack"], "sinks": ["channel"], "links": ["body"], "label": "trusted",
                                 "risk": "medium", "side_effect": "write_external",
                                 "intent": MESSAGE_INTENT + ["channel*", "post*", "announc*"]},
        # Who may read the channel.
        "add_user_to_channel": {"sinks": ["user", "channel"], "label": "trusted", "risk": "medium",
                                "side_effect": "write_internal", "intent": ["add*", "invit*", "join*", "includ*"]},
        "invite_user_to_slack": {"egress": ["mail"], "sinks": ["user", "user_email"], "formats": {"user_email": "email"},
                                 "label": "trusted", "risk": "high",
                                 "side_effect": "write_external", "intent": ["invit*", "onboard*", "add*", "join*"]},
        "remove_user_from_slack": {"sinks": ["user"], "label": "trusted", "risk": "high", "side_effect": "destructive",
                                   "intent": ["remov*", "kick*", "delet*", "offboard*", "ban*"]},
        # A GET carries data out in its URL.
        "get_webpage": {"egress": ["*"], "sinks": ["url"], "label": "untrusted", "side_effect": "read"},
        "post_webpage": {"egress": ["*"], "sinks": ["url"], "label": "trusted", "risk": "high", "side_effect": "write_external",
                         "intent": ["post*", "publish*", "upload*", "put* online", "put* web*"]},
    },
    "travel": {
        "get_user_information": {"data_access": ["pii:identity"], "label": "trusted", "side_effect": "read"},
        # The travel platform's own catalogue: names, prices, addresses, opening hours, contact details.
        "get_all_hotels_in_city": {"label": "trusted", "side_effect": "read"},
        "get_hotels_prices": {"label": "trusted", "side_effect": "read"},
        "get_hotels_address": {"label": "trusted", "side_effect": "read"},
        "get_all_restaurants_in_city": {"label": "trusted", "side_effect": "read"},
        "get_cuisine_type_for_restaurants": {"label": "trusted", "side_effect": "read"},
        "get_restaurants_address": {"label": "trusted", "side_effect": "read"},
        "get_dietary_restrictions_for_all_restaurants": {"label": "trusted", "side_effect": "read"},
        "get_contact_information_for_restaurants": {"label": "trusted", "side_effect": "read"},
        "get_price_for_restaurants": {"label": "trusted", "side_effect": "read"},
        "check_restaurant_opening_hours": {"label": "trusted", "side_effect": "read"},
        "get_all_car_rental_companies_in_city": {"label": "trusted", "side_effect": "read"},
        "get_car_types_available": {"label": "trusted", "side_effect": "read"},
        "get_car_fuel_options": {"label": "trusted", "side_effect": "read"},
        "get_car_rental_address": {"label": "trusted", "side_effect": "read"},
        "get_car_price_per_day": {"label": "trusted", "side_effect": "read"},
        "get_flight_information": {"label": "trusted", "side_effect": "read"},
        # Reviews are written by anyone.
        "get_rating_reviews_for_hotels": {"label": "untrusted", "side_effect": "read"},
        "get_rating_reviews_for_restaurants": {"label": "untrusted", "side_effect": "read"},
        "get_rating_reviews_for_car_rental": {"label": "untrusted", "side_effect": "read"},
        # A booking hands the user's details to the business.
        "reserve_hotel": {"egress": ["reservations"], "sinks": ["hotel"], "label": "trusted", "risk": "high",
                          "side_effect": "write_external", "intent": booking("hotel*", "room*", "stay*", "accommodation*", "lodging*")},
        "reserve_car_rental": {"egress": ["reservations"], "sinks": ["company"], "label": "trusted", "risk": "high",
                               "side_effect": "write_external",
                               "intent": booking("car*", "vehicle*") + ["rent* car*", "rent* vehicle*", "hire* car*"]},
        "reserve_restaurant": {"egress": ["reservations"], "sinks": ["restaurant"], "label": "trusted", "risk": "high",
                               "side_effect": "write_external",
                               "intent": booking("restaurant*", "table*", "dinner*", "lunch*", "breakfast*", "brunch*", "meal*")},
        "create_calendar_event": CAL_CREATE,
        "search_calendar_events": CAL_SEARCH,
        "get_day_calendar_events": CAL_READ,
        "cancel_calendar_event": CAL_CANCEL,
        "send_email": MAIL_SEND,
    },
    "workspace": {
        "send_email": MAIL_SEND,
        "delete_email": {"sinks": ["email_id"], "label": "trusted", "risk": "medium", "side_effect": "destructive",
                         "intent": DELETE_INTENT},
        # Mail others wrote.
        "get_unread_emails": {"data_access": ["pii:email"], "label": "untrusted", "side_effect": "read"},
        "get_received_emails": {"data_access": ["pii:email"], "label": "untrusted", "side_effect": "read"},
        "search_emails": {"data_access": ["pii:email"], "label": "untrusted", "side_effect": "read"},
        # Mail the user wrote.
        "get_sent_emails": {"data_access": ["pii:email"], "label": "trusted", "side_effect": "read"},
        "get_draft_emails": {"data_access": ["pii:email"], "label": "trusted", "side_effect": "read"},
        # The user's address book.
        "search_contacts_by_name": {"data_access": ["pii:contacts"], "label": "trusted", "side_effect": "read"},
        "search_contacts_by_email": {"data_access": ["pii:contacts"], "label": "trusted", "side_effect": "read"},
        "get_current_day": {"label": "trusted", "side_effect": "read"},
        "search_calendar_events": CAL_SEARCH,
        "get_day_calendar_events": CAL_READ,
        "create_calendar_event": CAL_CREATE,
        "cancel_calendar_event": CAL_CANCEL,
        # These return the event they changed, with the description its organiser wrote: untrusted.
        "reschedule_calendar_event": {"label": "untrusted", "risk": "medium", "side_effect": "write_internal",
                                      "intent": ["reschedul*", "postpon*", "move*", "delay*", "chang* time*", "chang* date*",
                                                 "push* back", "bring* forward", "shift*"]},
        "add_calendar_event_participants": {"egress": ["calendar-invitations"], "sinks": ["participants"],
                                            "formats": {"participants": "email"},
                                            "label": "untrusted", "risk": "medium", "side_effect": "write_external",
                                            "intent": ["add*", "invit*", "includ*"]},
        # Files in the drive can be shared with and edited by others.
        "list_files": {"data_access": ["pii:files"], "label": "untrusted", "side_effect": "read"},
        "search_files": {"data_access": ["pii:files"], "label": "untrusted", "side_effect": "read"},
        # A file the user names by its name or id: the people it is shared with, set by its owner (not by its text),
        # are whom the user means by its collaborators (a recipient of mail about it, whom to share it with).
        "search_files_by_filename": {"data_access": ["pii:files"], "label": "untrusted", "side_effect": "read",
                                     "identifies_when_named": FILE_PEOPLE("$[*].shared_with~")},
        "get_file_by_id": {"data_access": ["pii:files"], "label": "untrusted", "side_effect": "read",
                           "identifies_when_named": FILE_PEOPLE("$.shared_with~")},
        # These return the whole file they changed, whose content others may have written: untrusted.
        "append_to_file": {"label": "untrusted", "side_effect": "write_internal", "intent": FILE_WRITE_INTENT},
        "create_file": {"label": "trusted", "side_effect": "write_internal", "intent": FILE_WRITE_INTENT + ["creat*", "new"]},
        "delete_file": {"sinks": ["file_id"], "label": "untrusted", "risk": "medium", "side_effect": "destructive",
                        "intent": DELETE_INTENT},
        "share_file": {"egress": ["drive-sharing"], "sinks": ["email"], "formats": {"email": "email"}, "label": "untrusted", "risk": "high",
                       "side_effect": "write_external",
                       "intent": ["shar*", "send*", "give* access", "grant*", "access*", "collaborat*", "permission*"]},
    },
}
