"""How the two bundled Label Studio exports of travel-chat-all were made, through a real, local
Label Studio server (nothing in them is written by hand; re-running this script gives the same
decisions):

1. annotations/scenario_review_export.json: stage1 samples the 39 scenarios (three per CONFETTI
   conversation type) and, the review being on, stops; `scenarios push` sends them to reviewers
   (label_config/stage1_scenario_review.xml), who accept most, edit two and reject one, through
   the API the way the labeling editor submits; then a snapshot export.
2. annotations/stage2_export.json: stage1 drafts the reviewed scenarios; `stage2 push` sends the
   conversations (label_config/stage2_conversation.xml); the annotator accepts, rewrites the
   rule-based agent's stiff replies and users' turns, makes the implicit-goal openings really
   implicit, keeps the failed conversations' chosen errors (the "calls that fail" ticks) and writes
   one outage message of their own; then a snapshot export. (conv-0035, rejected while stage1 read a
   car's drop-off from an attraction ticket, now looks the place up and is accepted.)

The decisions below are an annotator's, taken by reading each scenario and each conversation.

  FCBENCH_STUDIO_VENV=$PWD/.venv-studio .venv/bin/python datasets/travel-chat-all/make_annotations.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
ANNOTATIONS = REPO / "datasets" / "travel-chat-all" / "annotations"
REVIEW_EXPORT = ANNOTATIONS / "scenario_review_export.json"
STAGE2_EXPORT = ANNOTATIONS / "stage2_export.json"

# scenario id -> (verdict, {field: new value} for the scenario JSON, new description or None, notes)
REVIEW_DECISIONS: dict[str, tuple[str, dict, str | None, str]] = {
    "travel-chat-all-conv-0003": ("reject", {}, None,
                                  "Asking approval before reading an attraction's details is no real confirmation: "
                                  "nothing is booked or changed."),
    "travel-chat-all-conv-0002": ("edit", {"optional_apis": ["Search_Hotel_Destination", "Location_to_Lat_Long",
                                                              "Search_Hotels_By_Coordinates"]}, None,
                                  "A second hotel search API as a distractor: the agent must pick the right one."),
    "travel-chat-all-conv-0016": ("edit", {}, "You are a traveller talking to a travel assistant. Today is "
                                  "2025-06-01T09:00:00. You start to book a taxi across town, but while the assistant "
                                  "asks for the day you change your mind: you would rather hear about an attraction "
                                  "you could visit, and you drop the taxi. Take at least 2 turns.",
                                  "Description rewritten: the switch is easier to play from a story."),
}

# conversation id -> (verdict, [(text in the conversation JSON, its replacement)], notes)
DECISIONS: dict[str, tuple[str, list[tuple[str, str]], str]] = {
    # failed conversations: the chosen errors (pre-ticked) kept; one outage message of the annotator's own
    "travel-chat-all-conv-0012": ("fix", [
        ('"error": "The service is temporarily unavailable. Please try again later."}]},\n  {"user": "Never mind',
         '"error": "Room availability for this hotel cannot be loaded at the moment."}]},\n  {"user": "Never mind'),
        ("It failed again, so I cannot complete this request right now. Please try again later.",
         "It failed again: the room list of this hotel cannot be loaded at the moment, so I cannot show you its rooms.")],
        "My own outage message for the retry; the reply says what failed."),
    # implicit goals: the openings describe the situation, the agent infers the goal
    "travel-chat-all-conv-0004": ("fix", [
        ("My travel plans are a bit of a mess, nothing is sorted yet.",
         "I arrive in Fitzroy on September 5, 2025 at 17:45 and I have to get around Melbourne on my own until "
         "September 8, 2025 at 17:45, when I finish at the Royal Botanic Gardens Victoria."),
        ("Of course. What exactly would you like me to look up?",
         "It sounds like a rental car would suit you. Shall I look for one picked up in Fitzroy on September 5, 2025 "
         "at 17:45 and returned at the Royal Botanic Gardens Victoria on September 8, 2025 at 17:45?"),
        ("Could you find a rental car to pick up at Fitzroy on September 5, 2025 at 17:45 and drop off at Royal Botanic "
         "Gardens Victoria on September 8, 2025 at 17:45?", "Yes, that is exactly what I need."),
        ("I found 5 options; the first is Volkswagen Golf or similar (group: Medium, seats: 5, doors: 5).",
         "There are 5 cars for those days; the first is a Volkswagen Golf or similar (medium, 5 seats).")],
        "Opening rewritten: the user describes the situation, the agent infers the rental."),
    "travel-chat-all-conv-0030": ("fix", [
        ("My travel plans are a bit of a mess, nothing is sorted yet.",
         "I land at Barcelona El Prat on December 1, 2025 at 06:30 and my flat is in Barceloneta. I really do not "
         "want to drag my bags onto a bus that early."),
        ("Of course. What exactly would you like me to look up?",
         "A taxi from the airport would save you the bus. Shall I look for taxis from Barcelona El Prat to "
         "Barceloneta on December 1, 2025 at 06:30?"),
        ("Book a taxi from Barcelona El Prat to Barceloneta on December 1, 2025 at 06:30 with prices in JPY.",
         "Yes please, and show me the prices in JPY."),
        ("I found 4 options; the first is Toyota Camry or similar (vehicle type: Standard, passenger capacity: 3, bags: 2).",
         "There are 4 taxi offers; the first is a standard car (a Toyota Camry or similar) for 3 passengers and 2 bags.")],
        "Opening rewritten: the user describes the situation, the agent infers the taxi."),
    "travel-chat-all-conv-0036": ("fix", [
        ("My travel plans are a bit of a mess, nothing is sorted yet.",
         "The three of us are in Melbourne from April 3, 2026 to April 10, 2026 and want to stay within 5 km of the "
         "Queen Victoria Market, but we have nowhere to sleep yet."),
        ("Of course. What exactly would you like me to look up?",
         "You need a hotel, then. Shall I look for hotels within 5 km of the Queen Victoria Market from April 3, 2026 "
         "to April 10, 2026?"),
        ("I'd like you to look for hotels near Queen Victoria Market from April 3, 2026 to April 10, 2026 for 3 adults "
         "within 5 km.", "Yes please, for 3 adults."),
        ("I found 5 options; the first is Melbourne CBD Suites (district: Melbourne CBD, city name: Melbourne, "
         "latitude: -37.812521).", "I found 5 hotels; the first is Melbourne CBD Suites, in the Melbourne CBD.")],
        "Opening rewritten: the user describes the situation, the agent infers the hotel search."),
    # follow-ups asked the way people ask
    "travel-chat-all-conv-0023": ("fix", [
        ("What is the transmission of the first one?", "Is that one a manual or an automatic?"),
        ("The transmission of the first one is Manual.", "It is a manual.")], "Follow-up made natural."),
    "travel-chat-all-conv-0034": ("fix", [
        ("What is the flight number of the first one?", "What is its flight number?"),
        ("The flight number of the first one is AZ 670.", "It is flight AZ 670."),
        ("I found 2 options; the first is Berlin Brandenburg Airport (departure time: February 14, 2026 at 16:35, "
         "arrival time: February 14, 2026 at 18:40, total time: 7500).",
         "The first flight leaves Berlin Brandenburg Airport on February 14, 2026 at 16:35 and lands in Rome at 18:40.")],
        "Follow-up and reply made natural: the answer is about the flight, not a list of options."),
    "travel-chat-all-conv-0039": ("fix", [
        ("What is the flight number of the first one?", "Which flight number is that?"),
        ("The flight number of the first one is EW 378.", "It is flight EW 378.")], "Follow-up made natural."),
    # replies and questions the rule-based agent wrote stiffly
    "travel-chat-all-conv-0027": ("fix", [
        ("Which depart date should I use?", "Which day do you want to fly out?"),
        ("I found 2 options; the first is London Heathrow Airport (departure time: October 22, 2026 at 20:35, "
         "arrival time: October 22, 2026 at 23:35, total time: 7200).",
         "The second flight leaves London Heathrow Airport on October 22, 2026 at 20:35 and lands at 23:35.")],
        "Question and reply rewritten: the reply is about the second flight the user asked for."),
    "travel-chat-all-conv-0020": ("fix", [
        ("The service refused that request: drop off date is not a calendar date: '2025-02-30'. Which date did you mean "
         "instead of 2025-02-30?",
         "The rental search refused the drop-off date: 2025-02-30 is not a day of the calendar. Which day did you mean?")],
        "Error reply rewritten for a traveller."),
    "travel-chat-all-conv-0008": ("fix", [
        ("I am sorry, I cannot do that: I can only help with these services: search car location and search car rentals.",
         "I am sorry, I cannot reserve restaurants: I can only search rental cars and their pick-up and drop-off places.")],
        "Refusal rewritten."),
    "travel-chat-all-conv-0032": ("fix", [
        ("I am sorry, I cannot do that: I can only help with these services: taxi search location and search taxi.",
         "I am sorry, I cannot check visa rules: I can only search taxis and their pick-up and drop-off places.")],
        "Refusal rewritten."),
    "travel-chat-all-conv-0013": ("fix", [
        ("No problem. I found Tokyo Tower observation deck ticket: short description: Panoramic views over the whole "
         "city, city name: Tokyo, duration: 60 minutes, address: Tokyo Tower, Tokyo, Japan.",
         "No problem. At Tokyo Tower there is the observation deck ticket: panoramic views over the whole city "
         "(about an hour).")], "Reply rewritten."),
    "travel-chat-all-conv-0010": ("fix", [
        ("For your first request, I found 5 options; the first is Monti Park Hotel (district: Monti, city name: Rome, "
         "latitude: 41.894242). For your second request, I found Colosseum admission ticket: short description: Entry "
         "to one of the city's best-known sights, city name: Rome, duration: 90 minutes, address: Colosseum, Rome, "
         "Lazio, Italy.",
         "I found 5 hotels in central Rome; the first is Monti Park Hotel, in Monti. The Colosseum admission ticket "
         "gives entry to one of the city's best-known sights and takes about 90 minutes.")],
        "Reply rewritten."),
}


def _review(client, task, to_name: str) -> None:
    from annotate.tasks.single import choices_result, textarea_result

    verdict, changes, description, notes = REVIEW_DECISIONS.get(task.sample_id, ("accept", {}, None, ""))
    prediction = client.predictions.list(task=task.id)[0]
    result = [dict(region) for region in prediction.result]
    for region in result:
        if region["from_name"] == "scenario_json" and changes:
            settings = json.loads(region["value"]["text"][0])
            settings.update(changes)
            region["value"] = {"text": [json.dumps(settings, ensure_ascii=False, indent=1)]}
        if region["from_name"] == "description" and description is not None:
            region["value"] = {"text": [description]}
    result.append(choices_result("verdict", to_name, [verdict]))
    if notes:
        result.append(textarea_result("notes", to_name, notes))
    client.annotations.create(id=task.id, result=result, lead_time=60.0)
    print(task.sample_id, verdict)


def _annotate(client, task) -> None:
    from annotate.tasks.single import choices_result, textarea_result

    verdict, edits, notes = DECISIONS.get(task.sample_id, ("accept", [], ""))
    prediction = client.predictions.list(task=task.id)[0]
    result = [dict(region) for region in prediction.result]
    to_name = result[0]["to_name"]
    for region in result:
        if edits and region["from_name"] == "conversation_json":
            text = region["value"]["text"][0]
            for old, new in edits:
                assert old in text, (task.sample_id, old)
                text = text.replace(old, new)
            region["value"] = {"text": [text]}
    result.append(choices_result("verdict", to_name, [verdict]))
    if notes:
        result.append(textarea_result("notes", to_name, notes))
    client.annotations.create(id=task.id, result=result, lead_time=120.0)
    print(task.sample_id, verdict)


def main() -> None:
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.stage1.review import project_title as review_title, run_scenario_pull, run_scenario_push
    from annotate.stage2.conversation import project_title, run_conversation_push
    from annotate.studio.client import Connection, open_client
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from fcbench.config import load_pipelines
    from fcbench.jsonl import write_json
    from generate.stage1.conversation import run_conversation_stage1

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("travel-chat-all")
    for name in ("scenarios.reviewed.jsonl", "templates.jsonl"):  # earlier work would not be pushed again
        (pipeline.build_dir / name).unlink(missing_ok=True)
    print("stage1 (scenarios)", run_conversation_stage1(pipeline, offline=True, force=True).summary["counts"])
    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="travel-chat-all-studio-")), port=free_port())
    start(config)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        print("scenarios pushed", run_scenario_push(pipeline, connection).counts)
        project = find_project(client, review_title(pipeline))
        for task in sorted(list_tasks(client, int(project.id)), key=lambda task: task.sample_id or ""):
            _review(client, task, "scenario")
        snapshot = export_snapshot(connection, client, int(project.id))
        ANNOTATIONS.mkdir(parents=True, exist_ok=True)
        write_json(REVIEW_EXPORT, sorted(snapshot, key=lambda task: task["id"]), indent=1)
        print("review pulled", run_scenario_pull(pipeline, from_export=REVIEW_EXPORT).counts)
        print("stage1 (conversations)", run_conversation_stage1(pipeline, offline=True, force=True).summary["counts"])

        print("conversations pushed", run_conversation_push(pipeline, connection).counts)
        project = find_project(client, project_title(pipeline))
        for task in sorted(list_tasks(client, int(project.id)), key=lambda task: task.sample_id or ""):
            _annotate(client, task)
        snapshot = export_snapshot(connection, client, int(project.id))
        write_json(STAGE2_EXPORT, sorted(snapshot, key=lambda task: task["id"]), indent=1)
        print(f"{len(snapshot)} tasks exported to {STAGE2_EXPORT}")
    finally:
        stop(config)


if __name__ == "__main__":
    main()
